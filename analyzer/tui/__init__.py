"""`mcptap tui`: a terminal UI (Textual) over a database, live: sessions, the frame list with the
display filter, a frame's detail with its pair and findings, the findings by code, following a
recording as it grows. `lines` turns what the live viewer's reads give (analyzer/report/livedata.py)
into cells and text; `app` is the Textual application."""
