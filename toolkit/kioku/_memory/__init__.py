"""Long-term memory: pure rules, repositories and the tool flows."""
