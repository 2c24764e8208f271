"""The results database (`orchestra db`) and the trend over runs (`orchestra trend`)."""
