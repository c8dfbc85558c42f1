"""What the test tools on the real `mcp` SDK share (they run in the side virtual environment and import
this from their own folder): a server's in-memory SSE event store, a client's in-memory OAuth storage."""


class EventStore:
    """Every event kept in memory, numbered: the SSE events carry ids (`id: 7`), and a client may resume."""

    def __init__(self):
        self.events = []  # (stream id, message)

    async def store_event(self, stream_id, message):
        self.events.append((stream_id, message))
        return str(len(self.events))

    async def replay_events_after(self, last_event_id, send_callback):
        from mcp.server.streamable_http import EventMessage

        if not last_event_id.isdigit() or not 0 < int(last_event_id) <= len(self.events):
            return None
        stream = self.events[int(last_event_id) - 1][0]
        for n, (sid, message) in enumerate(self.events[int(last_event_id):], int(last_event_id) + 1):
            if sid == stream and message is not None:
                await send_callback(EventMessage(message, str(n)))
        return stream


class Memory:
    """An OAuth client's tokens and registration, kept in memory (the SDK's TokenStorage)."""

    def __init__(self):
        self.tokens = self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        self.client = info
