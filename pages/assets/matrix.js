// The fault picker: tick the rows (faults) a production sees; the locks
// whose cells keep every promise in all ticked rows (data-keeps, which
// the page's generator computed from the plays) stand out. Names are read
// from the page and written back as text, never as markup.
(function () {
  "use strict";
  const table = document.querySelector("table.matrix");
  const answer = document.getElementById("pick-answer");
  if (!table || !answer) return;
  const heads = [...table.querySelectorAll("thead th.lock-col")];
  const rows = [...table.querySelectorAll("tr.story-row")];
  const groups = [...table.querySelectorAll("input.pick-group")];

  function ticked() {
    return rows.filter(tr => tr.querySelector("input.pick-row").checked);
  }
  function update() {
    const on = ticked();
    const keep = [];
    heads.forEach((th, i) => {
      const ok = on.length > 0 && on.every(tr => {
        const td = tr.querySelectorAll("td")[i];
        return !!td && td.dataset.keeps === "1";
      });
      th.classList.toggle("keeps", ok);
      if (ok) keep.push(th.textContent);
    });
    for (const tr of rows) {
      tr.classList.toggle("picked", tr.querySelector("input.pick-row").checked);
      tr.querySelectorAll("td").forEach((td, i) => td.classList.toggle("col-keeps", !!heads[i] && heads[i].classList.contains("keeps")));
    }
    for (const g of groups) {
      const mine = rows.filter(tr => tr.dataset.group === g.dataset.group);
      const n = mine.filter(tr => tr.querySelector("input.pick-row").checked).length;
      g.checked = n > 0 && n === mine.length;
      g.indeterminate = n > 0 && n < mine.length;
    }
    answer.textContent = "";
    if (on.length === 0) {
      answer.textContent = "Tick rows below.";
      answer.dataset.locks = "";
      return;
    }
    const what = on.length === 1 ? "the ticked row" : "all " + on.length + " ticked rows";
    const b = document.createElement("strong");
    if (keep.length === 0) {
      b.textContent = "none";
      answer.append("Locks that kept every promise under " + what + ": ", b, " — no lock kept them all there (or none was played there).");
    } else {
      b.textContent = keep.join(", ");
      answer.append("Locks that kept every promise under " + what + ": ", b, ".");
    }
    answer.dataset.locks = keep.join("\n");
  }
  for (const tr of rows) tr.querySelector("input.pick-row").addEventListener("change", update);
  for (const g of groups) {
    g.addEventListener("change", () => {
      for (const tr of rows) {
        if (tr.dataset.group === g.dataset.group) tr.querySelector("input.pick-row").checked = g.checked;
      }
      update();
    });
  }
  update();
})();
