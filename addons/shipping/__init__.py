"""How capture hands what passed to a recorder process: the chunk queue, the record format on the pipe, and the recorder's process setup."""
