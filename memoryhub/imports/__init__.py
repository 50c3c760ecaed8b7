"""Import: files of memories (MemoryHub, Mem0) or conversations (ChatGPT, Claude) brought in."""
