"""mcptap's recorder as a mitmproxy script, for any mitmproxy mode:

    mitmdump -s addons/http_recorder.py --set mcptap_db=PATH [--set mcptap_label=L] [--set mcptap_keep_credentials=true]

The addon itself is addons/http_tap.py (mitmproxy loads a script outside `sys.modules`, where
dataclasses cannot live, so this file only hands mitmproxy an instance)."""

from addons.http_tap import McpTap

addons = [McpTap()]
