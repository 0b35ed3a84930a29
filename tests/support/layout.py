"""Layout checks for the browser tests: which tables are wider than the box they sit in."""

# Every table inside <main>: its own width against its scroll region's (or parent's) visible width and
# against the card (or main) holding it; the page itself must not scroll sideways either.
WIDE_TABLES = """() => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > window.innerWidth) problems.push(`the page is ${root.scrollWidth} px wide in a ${window.innerWidth} px window`);
  for (const table of document.querySelectorAll("main table")) {
    if (!table.offsetParent) continue;  // not shown (a closed <details>, an empty list)
    const name = table.id || table.className || "table";
    const box = table.closest(".table-scroll") || table.parentElement;
    if (box.scrollWidth > box.clientWidth + 1) problems.push(`${name}: ${box.scrollWidth} px in a ${box.clientWidth} px box`);
    const card = (table.closest(".card") || document.querySelector("main")).getBoundingClientRect();
    const rect = table.getBoundingClientRect();
    if (rect.right > card.right + 1 || rect.left < card.left - 1) problems.push(`${name}: sticks out of its card`);
  }
  return problems;
}"""


def wide_tables(page) -> list[str]:
    """Why tables on the page do not fit their box (empty when all fit)."""
    return page.evaluate(WIDE_TABLES)


def in_viewport(page, selector: str) -> bool:
    """The element's top edge and some of its height are inside the viewport as it is now."""
    return page.evaluate("""(selector) => {
      const rect = document.querySelector(selector).getBoundingClientRect();
      return rect.top >= 0 && rect.top < window.innerHeight && rect.height > 0;
    }""", selector)
