// Small named helpers for htmx; no inline scripts anywhere.
document.addEventListener("htmx:beforeSwap", function allowValidationErrorSwap(event) {
  // Invalid forms come back as 422 with the re-rendered fragment: let htmx swap it in.
  // Refused actions also answer 422 with HX-Reswap: none, so only their message is swapped.
  if (event.detail.xhr.status === 422) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

document.addEventListener("htmx:responseError", function showRequestFailure() {
  // A 404 or 500 under htmx swaps nothing: say so in the messages region instead of staying silent.
  var region = document.getElementById("messages");
  if (region) {
    region.innerHTML = '<ul class="messages"><li class="message message-error">That did not work. Reload the page and try again.</li></ul>';
  }
});
