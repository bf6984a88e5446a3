"""Drop-ins that make tract the history store of agent frameworks.

Each adapter lives in its own module and imports its framework only when that module is
imported, so ``import tract`` never pulls in a framework:

- :mod:`tract.integrations.openai_agents`: ``TractSession``, a session of the OpenAI Agents
  SDK (the ``openai-agents`` extra: ``pip install "./crates/tract-py[openai-agents]"`` from a
  checkout).
"""
