// Small named helpers for htmx; no inline scripts anywhere.

function said(name, english) {
  // The words this script shows, in the page's language: base.html renders them into
  // data-text-* attributes of <body> (English here only if a page lacks them).
  return (document.body && document.body.getAttribute("data-text-" + name)) || english;
}

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
    var list = document.createElement("ul");
    var item = document.createElement("li");
    list.className = "messages";
    item.className = "message message-error";
    item.textContent = said("failed", "That did not work. Reload the page and try again.");
    list.appendChild(item);
    region.replaceChildren(list);
  }
});

// Undo instead of "are you sure?": a delete waits a few seconds behind an Undo button, then
// goes (the card's hx-trigger is "mh-undo-expired"). Without JavaScript the Delete link opens
// a confirmation page instead, and "No, it's wrong" posts its form as usual.
var UNDO_SECONDS = 5;
var heldActions = [];

function announce(text) {
  var region = document.getElementById("messages");
  if (region) {
    var list = document.createElement("ul");
    var item = document.createElement("li");
    list.className = "messages";
    item.className = "message";
    item.textContent = text;
    list.appendChild(item);
    region.replaceChildren(list);
  }
}

function csrfToken() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  } catch (error) {
    return "";
  }
}

function sendHeldActionNow(trigger) {
  // The page is going away, or the card already left it: a beacon is still delivered.
  var data = trigger.tagName === "FORM" ? new FormData(trigger) : new FormData();
  if (!data.has("csrfmiddlewaretoken")) {
    data.append("csrfmiddlewaretoken", csrfToken());
  }
  navigator.sendBeacon(trigger.getAttribute("hx-post"), data);
}

function holdForUndo(trigger) {
  var card = document.getElementById(trigger.getAttribute("data-undo-card"));
  if (!card) {
    htmx.trigger(trigger, "mh-undo-expired");
    return;
  }
  var notice = document.createElement(card.tagName === "LI" ? "li" : "div");
  var text = document.createElement("span");
  var undo = document.createElement("button");
  notice.className = "feedback undo-notice";
  text.textContent = trigger.getAttribute("data-undo") + " ";
  undo.type = "button";
  undo.className = "secondary";
  undo.textContent = said("undo", "Undo");
  notice.append(text, undo);
  card.hidden = true;
  card.insertAdjacentElement("afterend", notice);
  announce(
    trigger.getAttribute("data-undo") + " " + said("undo-hint", "You can undo it for a few seconds.")
  );
  undo.focus();

  var held = {};
  function release() {
    clearTimeout(held.timer);
    heldActions.splice(heldActions.indexOf(held), 1);
    notice.remove();
  }
  held.go = function goAhead() {
    release();
    if (document.body.contains(trigger)) {
      htmx.trigger(trigger, "mh-undo-expired");
    } else {
      sendHeldActionNow(trigger);
    }
  };
  held.flush = function sendBeforeLeaving() {
    release();
    sendHeldActionNow(trigger);
  };
  undo.addEventListener("click", function undoHeldAction() {
    release();
    card.hidden = false;
    announce(said("undone", "Undone: nothing was deleted."));
    var focusable = trigger.tagName === "FORM" ? trigger.querySelector("button") : trigger;
    if (focusable) {
      focusable.focus();
    }
  });
  held.timer = setTimeout(held.go, UNDO_SECONDS * 1000);
  heldActions.push(held);
}

document.addEventListener("click", function offerUndoForLinks(event) {
  var trigger = event.target.closest("a[data-undo]");
  if (trigger && typeof htmx !== "undefined") {
    event.preventDefault();
    holdForUndo(trigger);
  }
});

document.addEventListener("submit", function offerUndoForForms(event) {
  var form = event.target.closest("form[data-undo]");
  if (form && typeof htmx !== "undefined") {
    event.preventDefault();
    holdForUndo(form);
  }
});

window.addEventListener("pagehide", function sendHeldActions() {
  heldActions.slice().forEach(function (held) {
    held.flush();
  });
});

// Keyboard focus after a swap: where the person's attention goes, never back to the top of the
// page. The element that asked names the target by id in data-focus-after: the section heading
// after a tab switch, the saved item after Save, its Edit button after Cancel.
document.addEventListener("htmx:afterSettle", function moveFocusAfterSwap(event) {
  var asker = event.detail.requestConfig && event.detail.requestConfig.elt;
  var targetId = asker && asker.getAttribute("data-focus-after");
  if (!targetId || event.detail.xhr.status === 422) {
    return; // An invalid form comes back with its own autofocus on the field to fix.
  }
  var target = document.getElementById(targetId);
  if (target) {
    if (!target.matches("a[href], button, input, select, textarea, [tabindex]")) {
      target.setAttribute("tabindex", "-1");
    }
    target.focus();
  }
});

// Search results say how many close matches are shown: keep it true when one is deleted.
document.addEventListener("htmx:afterSettle", function countSearchResults() {
  var count = document.getElementById("search-count");
  var list = document.getElementById("search-list");
  if (!count || !list) {
    return;
  }
  // The sentences come from the template, in the page's language (_search_results.html).
  var shown = list.querySelectorAll(":scope > li.memory").length;
  var sentence = shown === 0 ? "data-none" : shown === 1 ? "data-one" : "data-many";
  count.textContent = count.getAttribute(sentence).replace("{count}", String(shown));
});

// An item answered elsewhere on the page (rewritten by its owner): its "Is this right?" box
// goes, if it is shown at all (only the newest few are).
document.addEventListener("mh-answered", function dropAnsweredQuestion(event) {
  var box = document.getElementById(event.detail.id);
  if (box) {
    box.remove();
  }
});

document.addEventListener("DOMContentLoaded", function hideLanguageButtons() {
  // With JavaScript the language switch applies on choosing (below): its button is only for
  // browsers without it.
  document.querySelectorAll(".language-switch button").forEach(function (button) {
    button.hidden = true;
  });
});

document.addEventListener("change", function submitLanguageChoice(event) {
  // The language switch (templates/_language_switch.html) applies on choosing.
  var select = event.target;
  if (select.matches && select.matches("select[data-submit-on-change]")) {
    select.form.requestSubmit();
  }
});
