"""Running headers and footers taken off a PDF's pages."""

from agent.ingest.page_furniture import without_running_lines

HEADER = "Velloran Coastal Trust Annual Report 2023"


def _page(number: int, body: str, total: int = 4) -> str:
    return f"{HEADER}\n{body}\nPage {number} of {total}"


def test_a_header_and_page_footer_on_every_page_go():
    bodies = [
        "It began at sea,\nfar out.",
        "The storm grew.\nNight fell.",
        "A harbour.",
        "The end.",
    ]
    pages = [_page(n, body) for n, body in enumerate(bodies, 1)]
    assert without_running_lines(pages) == bodies


def test_a_sentence_running_over_the_page_break_is_left_whole():
    pages = [
        _page(1, "We thank our partners, in particular Strand & Fennick", 3),
        _page(2, "Aggregates, who donated plant hire.", 3),
        _page(3, "The end.", 3),
    ]
    joined = " ".join(t.replace("\n", " ") for t in without_running_lines(pages))
    assert "Strand & Fennick Aggregates, who" in joined
    assert HEADER not in joined and "Page" not in joined


def test_lines_repeated_in_the_body_or_on_few_pages_stay():
    pages = [
        "Chapter One\nIt began at sea.\nThe crew slept.\nMorning came.\n12",
        "The storm grew.\nChapter One\nwas not forgotten.\nNight fell.\n13",
        "Chapter Two\nThe harbour at last.\nThey landed.\nThe end came.\n14",
        "A new day.\nThe town woke.\nBells rang out.\nIt was over.\n15",
    ]
    cleaned = without_running_lines(pages)
    assert cleaned[0].startswith("Chapter One\nIt began at sea.")  # 2 of 4 pages, not most
    assert "Chapter One" in cleaned[1]  # not on an edge
    assert all(not page.rstrip().endswith(("12", "13", "14", "15")) for page in cleaned)


def test_a_row_of_figures_ending_each_page_stays():
    pages = [f"Table {n} of results.\nYear Income\n2020 2021 2022" for n in range(1, 5)]
    assert all(page.endswith("2020 2021 2022") for page in without_running_lines(pages))


def test_a_page_of_nothing_but_the_repeated_line_keeps_it_and_failures_pass_through():
    failed = ValueError("unreadable")
    pages = ["habibi", "habibi", failed, "habibi"]
    assert without_running_lines(pages) == pages
