"""The security reading of a session (docs/security.md): what its server declared read for hidden
text, instructions to the model and tools that shadow others' (`text`, `patterns`), and every tool
call read against what was declared, its schema, the secrets it carries and the calls before it
(`reading`, `secrets`). Pure: frames in, findings out; the `security` rules
(analyzer/analysis/rules/security/) decide."""
