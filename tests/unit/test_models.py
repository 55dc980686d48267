"""Model factories: hosted and OpenAI-compatible models are one setting away."""

import pytest

from agent.config import Settings
from agent.models import chat_model, embedding_model, model_label


def test_openai_compatible_chat_model_uses_openai_base_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = chat_model("openai:gpt-4o-mini", Settings(), 0.7)
    assert type(model).__name__ == "ChatOpenAI"
    assert model.model_name == "gpt-4o-mini" and model.temperature == 0.7
    assert str(model.root_client.base_url).startswith("http://127.0.0.1:9")
    assert model_label("openai:gpt-4o-mini") == "gpt-4o-mini"
    # the per-turn limit is also the provider call's HTTP timeout
    assert model.request_timeout == Settings().chat_timeout_seconds
    assert (
        chat_model("openai:gpt-4o-mini", Settings(chat_timeout_seconds=7), 0.7).request_timeout == 7
    )


def test_the_local_model_samples_no_hotter_than_its_cap_and_hosted_ones_as_asked(monkeypatch):
    """The 1.5B model strays at a path's 0.7 (copies the wrong sentence, invents names): it
    is capped; a hosted model keeps the path's temperature."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = Settings(local_model_url="http://127.0.0.1:9", local_chat_max_temperature=0.1)
    assert chat_model("local", settings, 0.7).temperature == 0.1
    assert chat_model("local", settings, 0.0).temperature == 0.0
    hot = settings.model_copy(update={"local_chat_max_temperature": 1.0})
    assert chat_model("local", hot, 0.7).temperature == 0.7
    assert chat_model("openai:gpt-4o-mini", settings, 0.7).temperature == 0.7


def test_the_local_model_is_sent_its_reply_limit_under_the_name_llama_cpp_reads():
    """langchain-openai names the limit ``max_completion_tokens``; llama-cpp-python's server
    reads only ``max_tokens``, so the local client renames it (the setting, and a call's)."""
    from langchain_core.messages import HumanMessage

    settings = Settings(local_model_url="http://127.0.0.1:9", local_chat_max_tokens=77)
    model = chat_model("local", settings, 0.0)
    asked = [HumanMessage("Who is Dinah?")]
    payload = model._get_request_payload(asked)
    assert payload["max_tokens"] == 77 and "max_completion_tokens" not in payload
    assert model._get_request_payload(asked, max_tokens=5)["max_tokens"] == 5


def test_openai_embeddings_record_their_dimension(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    emb = embedding_model("openai:text-embedding-3-small", Settings())
    assert emb.name == "openai:text-embedding-3-small" and emb.dimension == 1536


def test_unknown_embedding_provider_is_refused():
    with pytest.raises(ValueError, match="QUIRE_EMBEDDING_MODEL"):
        embedding_model("cohere:embed-v3", Settings())


@pytest.mark.parametrize("file", ["packaged", "int8-dynamic"])
def test_local_embeddings_are_normalised_and_semantic(file, tmp_path):
    import numpy as np

    from agent.local_models import EMBEDDING_LABEL, PACKAGED_EMBEDDING_LABEL

    emb = embedding_model("local", Settings(home=tmp_path, local_embedding=file))
    assert emb.dimension == 384
    assert emb.name == (PACKAGED_EMBEDDING_LABEL if file == "packaged" else EMBEDDING_LABEL)
    cat, dinah, croquet = (
        np.array(v)
        for v in emb.embedder.embed_documents(
            ["Alice's cat", "Dinah was the cat.", "The Queen played croquet with flamingos."]
        )
    )
    assert abs(np.linalg.norm(cat) - 1) < 1e-3
    assert cat @ dinah > cat @ croquet
    long_text = "word " * 400  # past the shipped tokenizer's 128-token cut
    assert not np.allclose(
        emb.embedder.embed_query(long_text), emb.embedder.embed_query("word " * 100)
    )


def test_local_bulk_embeddings_equal_single_ones_in_order():
    """Passages in bulk run on one single-threaded session per thread, side by side: each
    vector must be the one a single call gives, in the order asked."""
    import numpy as np

    from agent.local_models import (
        EMBEDDING_LABEL,
        LocalMiniLMEmbeddings,
        ensure_embedding_model_file,
    )

    model = ensure_embedding_model_file(Settings().model_cache_dir)
    emb = LocalMiniLMEmbeddings(model, EMBEDDING_LABEL, threads=2)
    texts = [f"Note {i}: the {w} crossed the harbour." for i, w in enumerate("abcdefg")]
    bulk = np.array(emb.embed_documents(texts))
    single = np.array([emb.embed_query(t) for t in texts])
    assert bulk.shape == (7, 384)
    assert np.allclose(bulk, single, atol=1e-5)
    assert not np.allclose(bulk[0], bulk[1])


def test_requantised_embedder_is_built_once_the_same_and_stays_in_the_packaged_space(tmp_path):
    """The int8-arithmetic model is built from the packaged file byte for byte the same each
    time, and its vectors are the packaged model's up to quantisation: the same passage
    stays near its packaged vector and nearer to it than to any other passage's."""
    import numpy as np

    from agent.local_models import (
        EMBEDDING_LABEL,
        PACKAGED_EMBEDDING_LABEL,
        LocalMiniLMEmbeddings,
        ensure_embedding_model_file,
        packaged_embedding_model_file,
    )

    first = ensure_embedding_model_file(tmp_path / "a")
    second = ensure_embedding_model_file(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != packaged_embedding_model_file().read_bytes()
    assert ensure_embedding_model_file(tmp_path / "a") == first  # built once, then reused
    assert sorted(p.name for p in (tmp_path / "a").iterdir() if not p.name.startswith(".")) == [
        first.name
    ]

    texts = [
        "Mr. Bingley rented Netherfield Park and came down with his sisters.",
        "The Mock Turtle sang a song about turtle soup, very slowly and sadly.",
        "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
        "Interest rates rose twice in the spring, and bond prices fell.",
    ]
    fast = LocalMiniLMEmbeddings(first, EMBEDDING_LABEL)
    packaged = LocalMiniLMEmbeddings(packaged_embedding_model_file(), PACKAGED_EMBEDDING_LABEL)
    assert (fast.name, packaged.name) == (EMBEDDING_LABEL, PACKAGED_EMBEDDING_LABEL)
    similarity = np.array(fast.embed_documents(texts)) @ np.array(packaged.embed_documents(texts)).T
    assert similarity.diagonal().min() > 0.97
    assert (similarity.argmax(axis=1) == np.arange(len(texts))).all()


def test_local_embedder_falls_back_to_the_packaged_file_when_requantising_fails(
    tmp_path, monkeypatch
):
    """A broken quantiser (a missing package, a full disk) costs speed, not the embedder:
    the packaged file embeds, under its own label, so the store records what made its vectors."""
    from agent.local_models import PACKAGED_EMBEDDING_LABEL

    def broken(cache_dir):
        raise OSError("No space left on device")

    monkeypatch.setattr("agent.local_models.ensure_embedding_model_file", broken)
    emb = embedding_model("local", Settings(home=tmp_path, local_embedding="int8-dynamic"))
    assert emb.name == PACKAGED_EMBEDDING_LABEL and emb.dimension == 384
    assert len(emb.embedder.embed_query("Who rented Netherfield Park?")) == 384


def test_warming_the_local_embedder_makes_its_bulk_sessions_and_changes_no_vector():
    import numpy as np

    from agent.local_models import (
        EMBEDDING_LABEL,
        LocalMiniLMEmbeddings,
        ensure_embedding_model_file,
    )

    emb = LocalMiniLMEmbeddings(
        ensure_embedding_model_file(Settings().model_cache_dir), EMBEDDING_LABEL
    )
    before = np.array(emb.embed_query("The fire assembly point is the car park."))
    emb.warm()
    assert len(emb._bulk) == 2  # one single-threaded session per thread, made now
    after = np.array(emb.embed_query("The fire assembly point is the car park."))
    assert np.allclose(before, after, atol=1e-6)
