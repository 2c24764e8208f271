"""Our jobs directory in other tools' formats: `harbor` writes Harbor's jobs-directory documents
(typed by `harbor_documents`, checked against the real harbor package in the tests), `inspect_log`
Inspect AI eval logs (the only module importing `inspect_ai`); `sources` reads what both export."""
