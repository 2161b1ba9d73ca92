"""Database layer: models, engine, embedded server and migrations."""
