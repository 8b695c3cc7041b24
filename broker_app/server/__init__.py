"""Server edge: asyncio socket server and the request handlers (KafkaApis)."""
