/* How htmx treats answers on the pages where an expert types and decides (the workspace, the
 * review queue). Needs htmx 2 (loaded first); the page's own script comes after this one.
 *
 * 422 (invalid input) and 409 (conflict: stale or already settled) come back as the form or row
 * with its message and what was entered: swap them. Other errors are not swapped, so the input
 * stays on screen and the page's status line says them.
 */
(function () {
  "use strict";
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "409|422", swap: true },
    { code: "[45]..", swap: false, error: true },
    { code: "...", swap: false },
  ];
  // Settle at once: these pages animate nothing on settle, and htmx wires a swapped panel (its
  // forms, its hx- attributes) only when it settles; a key pressed in between would meet a panel
  // that does not answer yet.
  htmx.config.defaultSettleDelay = 0;
})();
