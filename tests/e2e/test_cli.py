"""The ``quire`` console script, run as a real subprocess against the test database."""

import json
import uuid

from agent.retrieval.citations import cited_ids
from tests.support.programs import quire
from tests.support.samples import alice_chapters


def test_users_add_prints_a_token_once():
    name = f"cli-{uuid.uuid4().hex[:6]}"
    created = quire("users", "add", name)
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("qk_") and len(token) > 30
    again = quire("users", "add", name)
    assert again.returncode == 1 and "already exists" in again.stderr
    # a second token for the same user; an unknown user gets an error line
    second = quire("users", "token", name)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().startswith("qk_") and second.stdout.strip() != token
    missing = quire("users", "token", f"nobody-{uuid.uuid4().hex[:6]}")
    assert missing.returncode == 1 and "no user named" in missing.stderr


def test_users_limit_sets_a_users_own_monthly_limit_and_list_shows_it():
    name = f"cli-limit-{uuid.uuid4().hex[:6]}"
    assert quire("users", "add", name).returncode == 0

    def listed() -> dict:
        run = quire("users", "list", "--json")
        assert run.returncode == 0, run.stderr
        return next(u for u in json.loads(run.stdout) if u["name"] == name)

    before = listed()
    assert before["own_limit"] is False and before["turns_this_month"] == 0
    set_ = quire("users", "limit", name, "25")
    assert set_.returncode == 0 and "25" in set_.stderr, set_.stderr
    assert listed() == {**before, "monthly_limit": 25, "own_limit": True}
    cleared = quire("users", "limit", name, "none")
    assert cleared.returncode == 0 and "default" in cleared.stderr
    table = quire("users", "list", COLUMNS="200")  # other tests' users are listed too
    [row] = [line for line in table.stdout.splitlines() if name in line]
    assert table.returncode == 0 and "(own)" not in row
    refused = quire("users", "limit", name, "lots")
    assert refused.returncode == 2, refused.stderr
    missing = quire("users", "limit", f"nobody-{uuid.uuid4().hex[:6]}", "5")
    assert missing.returncode == 1 and "no user named" in missing.stderr


def test_ingest_then_ask_as_json(tmp_path):
    user = f"reader-{uuid.uuid4().hex[:6]}"
    book = tmp_path / "alice-1-2.txt"  # two chapters: the CLI's work, a fraction of the embedding
    book.write_text(alice_chapters("CHAPTER I.", "CHAPTER III."), encoding="utf-8")
    first = quire("ingest", str(book), "--user", user, "--json")
    assert first.returncode == 0, first.stderr
    [result] = json.loads(first.stdout)
    assert result["status"] == "ingested" and result["chunks"] > 30
    second = json.loads(quire("ingest", str(book), "--user", user, "--json").stdout)
    assert second[0]["status"] == "duplicate" and second[0]["document_id"] == result["document_id"]

    asked = quire("ask", "Who is Dinah, Alice's cat?", "--user", user, "--json")
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert set(answer) >= {"answer", "route", "citations", "sources", "model_used", "tokens_used"}
    assert answer["route"] == "hybrid"
    # why the route was taken, the search settings used, and how sure the answer is
    assert answer["route_reason"] == answer["routing"]["reason"] == "specific question"
    assert answer["routing"]["mode"] == "specific" and answer["routing"]["route"] == "hybrid"
    assert answer["routing"]["confidence"] in ("high", "medium")
    assert answer["citations"] and any("Dinah" in c["text"] for c in answer["citations"])
    assert set(cited_ids(answer["answer"])) <= {c["id"] for c in answer["citations"]}
    for c in answer["citations"]:
        assert set(c) >= {"id", "chunk_id", "document", "chapter", "section", "page", "text"}

    other = json.loads(
        quire("ask", "Who is Dinah, Alice's cat?", "--user", f"bob-{user}", "--json").stdout
    )
    assert other["citations"] == [] and cited_ids(other["answer"]) == []


def test_ingest_reports_bad_files_and_keeps_going(tmp_path):
    bad = tmp_path / "picture.jpg"
    bad.write_bytes(b"\xff\xd8\xff")
    good = tmp_path / "note.txt"
    good.write_text(
        "Quire keeps good files even when a sibling fails. It says why the other failed."
    )
    run = quire(
        "ingest", str(bad), str(good), str(tmp_path / "missing.txt"), "--user", "cli-bad", "--json"
    )
    assert run.returncode == 1
    results = {r["path"].rsplit("/", 1)[-1]: r for r in json.loads(run.stdout)}
    assert (
        results["picture.jpg"]["status"] == "error"
        and "unsupported" in results["picture.jpg"]["error"]
    )
    assert results["missing.txt"]["status"] == "error"
    assert results["note.txt"]["status"] == "ingested"
    assert "error:" in run.stderr


def test_ask_streams_plain_text_with_sources(alice_reader):
    user, _ = alice_reader
    run = quire("ask", "What is your name?", "--user", user.name)
    assert run.returncode == 0, run.stderr
    assert "Quire" in run.stdout and "route: direct" in run.stdout
    assert "why: name question: a fixed reply · confidence: n/a" in run.stdout


def test_interactive_chat_streams_and_resumes_from_the_checkpointer(alice_reader):

    user, _ = alice_reader
    chat_id = str(uuid.uuid4())

    def session(lines: str) -> str:
        run = quire("chat", "--user", user.name, "--chat", chat_id, input=lines)
        assert run.returncode == 0, run.stderr
        return run.stdout

    first = session("What is your name?\nWho is Dinah?\n/quit\n")
    assert "Quire" in first and "route: direct" in first and "route: hybrid" in first
    assert "#chk_" in first
    second = session("hello\n")  # EOF ends the session
    assert "route: general" in second


def test_database_url_points_quire_at_an_existing_server(services, alice_reader, tmp_path):
    from agent.db.server import server_url, with_database

    user, _ = alice_reader
    url = with_database(server_url(services.settings), services.settings.database_name).libpq
    # an empty data folder: everything must come from the server named by DATABASE_URL
    asked = quire(
        "ask",
        "Who is Dinah?",
        "--user",
        user.name,
        "--json",
        DATABASE_URL=url,
        QUIRE_HOME=str(tmp_path / "elsewhere"),
    )
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["citations"]
    assert not (tmp_path / "elsewhere" / "pgdata").exists()


def test_folders_stdin_and_docs_lifecycle(tmp_path, services):

    user = f"lib-{uuid.uuid4().hex[:6]}"
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "one.md").write_text("# One\n\nThe first note mentions walruses.")
    (tmp_path / "a" / "b" / "two.txt").write_text("The second note mentions carpenters.")
    (tmp_path / "a" / "b" / "skip.bin").write_bytes(b"\x00\x01")
    folder = json.loads(quire("ingest", str(tmp_path / "a"), "--user", user, "--json").stdout)
    assert sorted(r["title"] for r in folder) == ["One", "two"]

    piped = quire(
        "ingest",
        "-",
        "--title",
        "Pasted note",
        "--user",
        user,
        "--json",
        input="Pasted text about oysters and a beautiful soup.",
    )
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)[0]["title"] == "Pasted note"

    listed = json.loads(quire("docs", "list", "--user", user, "--json").stdout)
    assert {d["title"] for d in listed} == {"One", "two", "Pasted note"}
    target = next(d for d in listed if d["title"] == "Pasted note")
    shown = json.loads(quire("docs", "show", target["id"], "--user", user).stdout)
    assert shown["chunks"] == 1 and shown["status"] == "ready"
    # another user can neither see nor delete it
    assert quire("docs", "show", target["id"], "--user", "someone-else").returncode == 1
    assert quire("docs", "delete", target["id"], "--user", "someone-else").returncode == 1
    assert quire("docs", "delete", target["id"], "--user", user).returncode == 0
    left = json.loads(quire("docs", "list", "--user", user, "--json").stdout)
    assert {d["title"] for d in left} == {"One", "two"}
    assert quire("docs", "show", "not-a-uuid", "--user", user).returncode == 2


def test_a_failing_chat_model_gives_one_error_line(alice_reader):
    """A hosted model that cannot be reached: an error line and exit 1, no traceback."""
    user, _ = alice_reader
    done = quire(
        "ask",
        "Who is Alice's cat?",
        "--user",
        user.name,
        QUIRE_CHAT_MODEL="openai:gpt-4o-mini",
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",  # nothing listens on the discard port
        QUIRE_CHAT_TIMEOUT_SECONDS="5",
    )
    assert done.returncode == 1, done.stderr
    assert "error:" in done.stderr and "QUIRE_DEBUG=1" in done.stderr
    assert "Traceback" not in done.stderr
