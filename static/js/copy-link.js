// Copy buttons (data-copy="<id of the element whose text is copied>"): the invitation links on
// the members page. The button says whether it worked; where the clipboard is refused (plain
// HTTP off localhost) the text is selected instead, for Ctrl+C.
(function () {
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const status = button.parentElement.querySelector("[data-copy-status]");
    try {
      await navigator.clipboard.writeText(source.textContent.trim());
      if (status) status.textContent = "Copied.";
    } catch (error) {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      if (status) status.textContent = "Selected: press Ctrl+C to copy.";
    }
  });
})();
