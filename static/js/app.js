// Small named helpers for htmx; no inline scripts anywhere.
document.addEventListener("htmx:beforeSwap", function allowValidationErrorSwap(event) {
  // Invalid forms come back as 422 with the re-rendered fragment: let htmx swap it in.
  if (event.detail.xhr.status === 422) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
