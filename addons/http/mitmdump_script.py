"""mcptap's recorder as a mitmproxy script, for any mitmproxy mode:

    mitmdump -s "$(mcptap addon-path)" --set mcptap_db=PATH [--set mcptap_label=L] [--set mcptap_keep_credentials=true]

with the mitmdump of the environment mcptap[proxy] is installed in (the script imports `mcptap`).
The addon itself is addons/http/tap.py (`mcptap.addons.http.tap`) (mitmproxy loads a script outside `sys.modules`, where
dataclasses cannot live, so this file only hands mitmproxy an instance)."""

from mcptap.addons.http.tap import McpTap

addons = [McpTap()]
