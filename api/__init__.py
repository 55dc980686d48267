"""The entry points people use: the FastAPI app and its routes, the LangGraph server's auth,
multipart uploads, the web page (``static``) and the ``quire`` CLI (``cli``). May import
every other layer; nothing imports it.
"""
