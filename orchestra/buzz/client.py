"""`BuzzClient`: every `buzz` command as one coroutine method (buzz-cli.md §12)."""

from orchestra.buzz.ops_channels import ChannelsOps
from orchestra.buzz.ops_memory import MemoryOps
from orchestra.buzz.ops_messages import MessagesOps
from orchestra.buzz.ops_users import UsersOps


class BuzzClient(MessagesOps, ChannelsOps, UsersOps, MemoryOps):
    """One identity on one relay; see the `orchestra.buzz` docstring for the full API."""
