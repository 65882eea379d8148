"""Configuration: worker and connector config definitions, validation and topic creation.

Definitions and validation only; nothing here runs a task.
"""
