// index.js: filter the runs by verdict, scenario and expectation. It reads
// the rows' data- attributes and fetches nothing.
(function () {
  "use strict";
  var doc = document;
  var form = doc.querySelector("form.filters");
  if (!form) return;
  var rows = Array.prototype.slice.call(doc.querySelectorAll("tr.run"));
  var verdict = doc.getElementById("filter-verdict");
  var scenario = doc.getElementById("filter-scenario");
  var unexpected = doc.getElementById("filter-unexpected");
  var status = doc.getElementById("filter-status");
  function apply() {
    var shown = 0;
    rows.forEach(function (r) {
      var ok = (!verdict.value || r.getAttribute("data-verdict") === verdict.value) &&
        (!scenario.value || r.getAttribute("data-scenario") === scenario.value) &&
        (!unexpected.checked || r.getAttribute("data-expected") === "no");
      r.hidden = !ok;
      if (ok) shown++;
    });
    status.textContent = "showing " + shown + " of " + rows.length;
  }
  [verdict, scenario, unexpected].forEach(function (el) { el.addEventListener("change", apply); });
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  form.hidden = false;
  apply();
})();
