// Shows one step at a time and moves between them: the buttons, the bars of the timeline, the
// arrow keys. It only hides and shows sections the page already holds; it builds no markup from
// the trace. Without it, every step is shown, one under the other.
(function () {
  "use strict";
  var steps = Array.prototype.slice.call(document.querySelectorAll("section[data-step]"));
  var bars = Array.prototype.slice.call(document.querySelectorAll("a[data-goto]"));
  var position = document.getElementById("position");
  var play = document.getElementById("play");
  var current = 0;
  var timer = null;
  if (steps.length === 0) {
    position.textContent = "No steps";
    return;
  }

  function show(index, focus) {
    current = Math.max(0, Math.min(steps.length - 1, index));
    steps.forEach(function (step, i) {
      step.hidden = i !== current;
      if (i === current) {
        step.setAttribute("aria-current", "step");
      } else {
        step.removeAttribute("aria-current");
      }
    });
    var shown = steps[current];
    bars.forEach(function (bar) {
      var here = bar.getAttribute("data-goto") === shown.getAttribute("data-step");
      bar.classList.toggle("current", here);
      if (here) {
        bar.setAttribute("aria-current", "true");
      } else {
        bar.removeAttribute("aria-current");
      }
    });
    position.textContent = "Step " + (current + 1) + " of " + steps.length + ", lane " + shown.getAttribute("data-lane");
    if (history.replaceState) {
      history.replaceState(null, "", "#step-" + (current + 1));
    }
    // Each step is read from its start, with the controls and the timeline above it in view.
    window.scrollTo(0, 0);
    if (focus) {
      shown.querySelector("h2").focus({ preventScroll: true });
    }
  }

  function stop() {
    if (timer !== null) {
      clearInterval(timer);
      timer = null;
    }
    play.setAttribute("aria-pressed", "false");
    play.textContent = "Play";
  }

  function toggle() {
    if (timer !== null) {
      stop();
      return;
    }
    if (current === steps.length - 1) {
      show(0);
    }
    play.setAttribute("aria-pressed", "true");
    play.textContent = "Pause";
    timer = setInterval(function () {
      if (current >= steps.length - 1) {
        stop();
      } else {
        show(current + 1);
      }
    }, 1500);
  }

  steps.forEach(function (step) {
    step.querySelector("h2").setAttribute("tabindex", "-1");
  });
  document.getElementById("prev").addEventListener("click", function () { stop(); show(current - 1); });
  document.getElementById("next").addEventListener("click", function () { stop(); show(current + 1); });
  play.addEventListener("click", toggle);
  bars.forEach(function (bar) {
    bar.addEventListener("click", function (event) {
      event.preventDefault();
      stop();
      show(Number(bar.getAttribute("data-goto")) - 1, true);
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
      return;
    }
    var moves = { ArrowRight: current + 1, ArrowLeft: current - 1, Home: 0, End: steps.length - 1 };
    if (event.key in moves) {
      event.preventDefault();
      stop();
      show(moves[event.key]);
    } else if (event.key === "p") {
      toggle();
    }
  });
  var fromHash = /^#step-(\d+)$/.exec(location.hash);
  show(fromHash ? Number(fromHash[1]) - 1 : 0);
  // The browser scrolls to a #step-N address once the page has loaded; the step is shown at the
  // top instead, under the controls.
  window.addEventListener("load", function () { window.scrollTo(0, 0); });
})();
