"""Markdown read without its markup: fenced code holds no headings, rules and emphasis go."""

from agent.ingest.markdown import plain_inline
from agent.ingest.parse import parse_bytes

FAQ = """# Glint Lights FAQ

*Support centre · Last updated 4 February 2025*

## How do I change the settings?

Open the file `glint.cfg` on the **GLINT** drive, or see [our guide](https://example.com/guide).

```ini
# glint.cfg, written by Glint Companion 3.4
[power]
auto_off_minutes = 45

[daybeam]
flash_interval_ms = 800
```

Save the file and eject the drive.

---

## Why does my light switch off?

After 45 minutes without movement; my_setting_name keeps its underscores.
"""


def test_fenced_code_is_read_as_it_is_and_holds_no_heading():
    doc = parse_bytes(FAQ.encode(), "faq.md")
    by_text = {p.text: p for p in doc.paragraphs}
    code = "# glint.cfg, written by Glint Companion 3.4; [power]; auto_off_minutes = 45"
    assert code in by_text
    assert by_text[code].chapter == "Glint Lights FAQ"  # the "# " line is no chapter
    assert by_text["Save the file and eject the drive."].section == (
        "How do I change the settings?"
    )
    assert "[daybeam]; flash_interval_ms = 800" in by_text


def test_rules_and_inline_markup_are_left_out():
    doc = parse_bytes(FAQ.encode(), "faq.md")
    texts = [p.text for p in doc.paragraphs]
    assert "---" not in texts
    assert texts[:2] == ["Glint Lights FAQ", "Support centre · Last updated 4 February 2025"]
    assert "Open the file glint.cfg on the GLINT drive, or see our guide." in texts
    assert texts[-1] == "After 45 minutes without movement; my_setting_name keeps its underscores."


def test_plain_inline():
    assert plain_inline("**IPX6** and __bold__, *em* and _em_, `x = 1`") == (
        "IPX6 and bold, em and em, x = 1"
    )
    assert plain_inline("![a lamp](lamp.png) [returns](https://e.com/r)") == "a lamp returns"
    assert plain_inline("2 * 3 * 4 and snake_case_name") == "2 * 3 * 4 and snake_case_name"


def test_a_footnote_is_read_where_it_is_referenced():
    text = (
        "# Handbook\n\n## Getting here\n\nPlease don't use the yard.[^park] Ask at the desk.[^park]\n\n"
        "## Contacts\n\nRing the desk.\n\n"
        "[^park]: Volunteers park free in the Tannery Lane car park\n    with a permit.\n"
        "[^old]: A note nothing references.\n"
    )
    located = [(p.section, p.text) for p in parse_bytes(text.encode(), "h.md").paragraphs]
    assert (
        "Getting here",
        "Please don't use the yard. (Note: Volunteers park free in the Tannery Lane car park "
        "with a permit.) Ask at the desk.",
    ) in located
    assert not any("[^park]" in t or t.startswith("Volunteers park") for _, t in located)
    assert located[-1] == ("Contacts", "[^old]: A note nothing references.")
