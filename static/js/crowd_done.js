// The crowd completion page: follow the platform's completion URL after a countdown the worker
// can stop (the code stays on the page; the link goes there at once).
(function () {
  const countdown = document.getElementById("crowd-countdown");
  if (!countdown) return;
  let left = Number(countdown.dataset.seconds) || 15;
  const timer = window.setInterval(function () {
    left -= 1;
    if (left <= 0) {
      window.clearInterval(timer);
      window.location.assign(countdown.dataset.url);
      return;
    }
    countdown.textContent = "You will be taken there in " + left + " second" + (left === 1 ? "" : "s") + ".";
  }, 1000);
  const stay = document.getElementById("crowd-stay");
  if (stay) {
    stay.addEventListener("click", function () {
      window.clearInterval(timer);
      countdown.textContent = "You stay on this page; use the button to return when you are ready.";
      stay.hidden = true;
    });
  }
})();
