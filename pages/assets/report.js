// report.js: zoom and pan shared by every chart of a run report, and
// tooltips that show the full operation. It reads only the page's own DOM
// (numbers from data- attributes, text via textContent) and fetches nothing.
(function () {
  "use strict";
  var doc = document;
  var root = doc.documentElement;
  var charts = Array.prototype.slice.call(doc.querySelectorAll("svg.chart"));

  function ready() {
    // Two frames: the first paints the page as the script left it.
    requestAnimationFrame(function () {
      requestAnimationFrame(function () {
        root.setAttribute("data-ready", String(Math.round(performance.now())));
      });
    });
  }

  // Tooltips: the SVG <title> texts move into one floating box that shows
  // at once, keeps line breaks and can be pinned to copy from.
  var tip = doc.createElement("div");
  tip.className = "tip";
  tip.hidden = true;
  doc.body.appendChild(tip);
  Array.prototype.slice.call(doc.querySelectorAll("svg title")).forEach(function (t) {
    t.parentNode.setAttribute("data-tip", t.textContent);
    t.parentNode.removeChild(t);
  });
  var pinned = null;
  function place(e) {
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var x = e.clientX + 14, y = e.clientY + 14;
    if (x + w > innerWidth - 4) x = Math.max(4, e.clientX - w - 14);
    if (y + h > innerHeight - 4) y = Math.max(4, e.clientY - h - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  function tipTarget(e) {
    return e.target && e.target.closest ? e.target.closest("[data-tip]") : null;
  }
  doc.addEventListener("mousemove", function (e) {
    if (pinned || dragging) return;
    var el = tipTarget(e);
    if (!el) { tip.hidden = true; return; }
    tip.textContent = el.getAttribute("data-tip");
    tip.hidden = false;
    place(e);
  });

  if (!charts.length) { ready(); return; }

  var span = +charts[0].getAttribute("data-span");
  var left = +charts[0].getAttribute("data-left");
  var plot = +charts[0].getAttribute("data-plot");
  var minView = Math.max(span / 1e6, 1000);
  var tl = doc.getElementById("timeline-svg");
  var home = { a: 0, b: span };
  if (tl) home = { a: +tl.getAttribute("data-view-a"), b: +tl.getAttribute("data-view-b") };
  var view = { a: home.a, b: home.b };
  var status = doc.getElementById("view-status");
  var SVG = "http://www.w3.org/2000/svg";

  var items = [];
  charts.forEach(function (svg) {
    Array.prototype.slice.call(svg.querySelectorAll(".z")).forEach(function (el) {
      items.push({
        el: el,
        tag: el.tagName.toLowerCase(),
        a: +el.getAttribute("data-a"),
        b: +el.getAttribute("data-b"),
        dx: +(el.getAttribute("data-dx") || 0),
        min: el.classList.contains("overlap") ? 2 : 1.5
      });
    });
  });
  var geos = Array.prototype.slice.call(doc.querySelectorAll("svg.chart g.zgeo"));
  var axes = Array.prototype.slice.call(doc.querySelectorAll("svg.chart g.axis"));

  function X(t) { return left + (t - view.a) / (view.b - view.a) * plot; }
  function fmt(x) { return x.toFixed(2); }
  function secs(t, d) { return (t / 1e9).toFixed(d) + "s"; }
  function step(w) {
    var raw = w / 8, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var ms = [1, 2, 5, 10];
    for (var i = 0; i < ms.length; i++) if (ms[i] * mag >= raw) return ms[i] * mag;
    return 10 * mag;
  }
  function decimals(s) { return Math.max(0, Math.ceil(-Math.log10(s / 1e9) - 1e-6)); }

  function drawAxis(g) {
    while (g.firstChild) g.removeChild(g.firstChild);
    var top = g.getAttribute("data-top"), bottom = g.getAttribute("data-bottom"), ly = g.getAttribute("data-label-y");
    var s = step(view.b - view.a), d = decimals(s);
    for (var t = Math.ceil(view.a / s) * s; t <= view.b + 1; t += s) {
      var x = fmt(X(t));
      var line = doc.createElementNS(SVG, "line");
      line.setAttribute("class", "grid");
      line.setAttribute("x1", x); line.setAttribute("x2", x);
      line.setAttribute("y1", top); line.setAttribute("y2", bottom);
      var text = doc.createElementNS(SVG, "text");
      text.setAttribute("class", "tick");
      text.setAttribute("x", x); text.setAttribute("y", ly);
      text.textContent = secs(t, d);
      g.appendChild(line); g.appendChild(text);
    }
  }

  function render() {
    var k = span / (view.b - view.a);
    var off = left - k * left - view.a / (view.b - view.a) * plot;
    for (var i = 0; i < items.length; i++) {
      var it = items[i], x = X(it.a);
      switch (it.tag) {
        case "rect":
          it.el.setAttribute("x", fmt(x));
          it.el.setAttribute("width", fmt(Math.max(X(it.b) - x, it.min)));
          break;
        case "g": it.el.setAttribute("transform", "translate(" + fmt(x) + ",0)"); break;
        case "circle": it.el.setAttribute("cx", fmt(x)); break;
        default: it.el.setAttribute("x", fmt(x + it.dx));
      }
    }
    geos.forEach(function (g) { g.setAttribute("transform", "matrix(" + k + ",0,0,1," + off + ",0)"); });
    axes.forEach(drawAxis);
    if (status) {
      var d = decimals(step(view.b - view.a)) + 1;
      status.textContent = "showing " + secs(view.a, d) + "–" + secs(view.b, d) + " of " + secs(span, 2);
    }
  }

  var queued = false;
  function setView(a, b) {
    var w = Math.min(Math.max(b - a, minView), span);
    if (a < 0) a = 0;
    if (a + w > span) a = span - w;
    view = { a: a, b: a + w };
    if (!queued) {
      queued = true;
      requestAnimationFrame(function () { queued = false; render(); });
    }
  }
  function zoomAt(t, factor) {
    var w = (view.b - view.a) * factor;
    var frac = (t - view.a) / (view.b - view.a);
    setView(t - frac * w, t - frac * w + w);
  }
  // timeAt converts a pointer position over a chart into run time.
  function timeAt(svg, clientX) {
    var r = svg.getBoundingClientRect();
    var ux = (clientX - r.left) * (+svg.viewBox.baseVal.width / r.width);
    var frac = Math.min(Math.max((ux - left) / plot, 0), 1);
    return view.a + frac * (view.b - view.a);
  }

  var dragging = null;
  charts.forEach(function (svg) {
    // A plain wheel scrolls the page; Ctrl (or a pinch, which browsers
    // report as Ctrl+wheel) zooms, a sideways wheel pans.
    svg.addEventListener("wheel", function (e) {
      if (e.ctrlKey || e.metaKey) {
        e.preventDefault();
        zoomAt(timeAt(svg, e.clientX), Math.exp(Math.max(-300, Math.min(300, e.deltaY)) * 0.002));
      } else if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        e.preventDefault();
        var dt = e.deltaX / plot * (view.b - view.a);
        setView(view.a + dt, view.b + dt);
      }
    }, { passive: false });
    svg.addEventListener("pointerdown", function (e) {
      if (e.button !== 0) return;
      dragging = { svg: svg, x: e.clientX, view: view, moved: false };
      svg.setPointerCapture(e.pointerId);
    });
    svg.addEventListener("pointermove", function (e) {
      if (!dragging || dragging.svg !== svg) return;
      var r = svg.getBoundingClientRect();
      var dx = (e.clientX - dragging.x) * (+svg.viewBox.baseVal.width / r.width);
      if (Math.abs(e.clientX - dragging.x) > 3) { dragging.moved = true; svg.classList.add("dragging"); tip.hidden = true; }
      if (!dragging.moved) return;
      var dt = dx / plot * (dragging.view.b - dragging.view.a);
      setView(dragging.view.a - dt, dragging.view.b - dt);
    });
    svg.addEventListener("pointerup", function (e) {
      if (!dragging) return;
      var d = dragging;
      dragging = null;
      svg.classList.remove("dragging");
      if (d.moved) return;
      // A click without a drag pins (or unpins) the tooltip.
      var el = tipTarget(e) || (doc.elementFromPoint && doc.elementFromPoint(e.clientX, e.clientY));
      el = el && el.closest ? el.closest("[data-tip]") : null;
      if (pinned || !el) { pinned = null; tip.classList.remove("pinned"); tip.hidden = true; return; }
      pinned = el;
      tip.textContent = el.getAttribute("data-tip");
      tip.hidden = false;
      tip.classList.add("pinned");
      place(e);
    });
  });
  doc.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && pinned) { pinned = null; tip.classList.remove("pinned"); tip.hidden = true; }
  });

  Array.prototype.slice.call(doc.querySelectorAll("[data-zoom]")).forEach(function (b) {
    b.addEventListener("click", function () {
      var z = b.getAttribute("data-zoom"), mid = (view.a + view.b) / 2;
      if (z === "all") setView(0, span);
      else if (z === "violation") setView(home.a, home.b);
      else if (z === "in") zoomAt(mid, 0.5);
      else if (z === "out") zoomAt(mid, 2);
    });
  });
  Array.prototype.slice.call(doc.querySelectorAll("button.show-window")).forEach(function (b) {
    b.hidden = false;
    b.addEventListener("click", function () {
      setView(+b.getAttribute("data-view-a"), +b.getAttribute("data-view-b"));
      if (tl) tl.scrollIntoView({ block: "nearest" });
    });
  });
  Array.prototype.slice.call(doc.querySelectorAll(".view-controls")).forEach(function (c) { c.hidden = false; });

  view = { a: home.a, b: home.b };
  render();
  ready();
})();
