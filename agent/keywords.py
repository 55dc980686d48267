"""The routing keywords: seed 000's lists, and the words strangers use beside them (the
defaults of ``Settings.reasoning_keywords`` and ``Settings.global_summary_keywords``)."""

# seed 000's lists first
# fmt: off
REASONING_KEYWORDS = [
    "analyze", "analyse", "analysis", "compare", "comparison", "contrast", "why", "how does",
    "how is", "how are", "what causes", "what leads to", "connect", "connection", "relationship",
    "relate", "correlate", "explain why", "what is the relationship", "what is the connection",
    "difference between", "similarities between", "distinguish",
    # beyond the seed: how strangers ask for analysis
    "explain how", "what motivates", "motivation", "motives", "what role", "significance",
    "symbolize", "symbolise", "symbolism", "evolve", "evolves", "change over", "changes over",
    "what effect", "impact of", "influence", "interpret", "pros and cons", "what if",
    "discuss", "differ", "assess", "evaluate", "critique", "examine", "what lessons",
    "to what extent", "in what ways", "in what way", "consequences", "infer",
    "give reasons", "reasons for", "justify",
]

GLOBAL_SUMMARY_KEYWORDS = [
    "summarize", "summarise", "summary", "overview", "what is this book about",
    "what is the book about", "tell me about this book", "describe this book",
    "what does this book cover", "book summary",
    # beyond the seed: how strangers ask for one
    "sum up", "sum it up", "summing up", "tl dr", "tldr", "gist", "synopsis", "recap",
    "what is it about", "what s it about", "what is the story about", "plot summary",
]
# fmt: on
