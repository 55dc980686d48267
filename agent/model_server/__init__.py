"""The local chat model, in a process of its own.

llama.cpp runs in a child process (:mod:`.process`: llama-cpp-python's OpenAI-compatible
server plus Quire's health and rerank routes), kept alive by a supervisor (:mod:`.supervisor`)
that restarts it when it dies. Every Quire process on a data folder shares one such server
(:mod:`.endpoint`), and reaches it over HTTP like any hosted OpenAI-compatible model
(:mod:`.client`). A crash in the model therefore ends one turn with ``model_unavailable``,
never the API or the LangGraph server. :mod:`.build` tells whether the installed llama.cpp
is the portable build, :mod:`.scoring` holds the query-likelihood rerank that runs next
to the model, and :mod:`.continuation` writes a reply on from given words.

May import: :mod:`agent.config`, :mod:`agent.prompts`, :mod:`agent.local_models`.
"""

HEALTH_PATH = "/quire/health"
LIKELIHOOD_PATH = "/quire/likelihood"
CONTINUE_PATH = "/quire/continue"
