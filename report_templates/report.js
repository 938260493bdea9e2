// chperf report: sortable tables, the all-queries filter, click-to-open SQL, and links into
// the collapsed sections at the end opening them.
// Vanilla JS, no dependencies, works from a file:// URL. Numbers sort on data-sort (plain
// numbers written by chperf), cells without a value sort last in both directions.
(function () {
  "use strict";

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) return numeric ? null : "";
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    if (!numeric) return raw.trim().toLowerCase();
    if (raw === null || raw.trim() === "") return null;
    var value = parseFloat(raw);
    return isNaN(value) ? null : value;
  }

  function sortTable(table, header) {
    var index = header.cellIndex;
    var numeric = header.getAttribute("data-type") === "num";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var headers = table.tHead.rows[0].cells;
    for (var i = 0; i < headers.length; i++) headers[i].removeAttribute("aria-sort");
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (row, position) {
      return { row: row, key: cellValue(row, index, numeric), position: position };
    });
    keyed.sort(function (a, b) {
      if (a.key === null && b.key === null) return a.position - b.position;
      if (a.key === null) return 1;
      if (b.key === null) return -1;
      var order = numeric ? a.key - b.key : a.key.localeCompare(b.key);
      if (order === 0) return a.position - b.position;
      return ascending ? order : -order;
    });
    var fragment = document.createDocumentFragment();
    keyed.forEach(function (item) { fragment.appendChild(item.row); });
    body.appendChild(fragment);
  }

  function makeSortable(table) {
    if (!table.tHead) return;
    var headers = table.tHead.rows[0].cells;
    for (var i = 0; i < headers.length; i++) {
      headers[i].addEventListener("click", function (event) {
        sortTable(table, event.currentTarget);
      });
    }
  }

  function setUpFilter() {
    var table = document.getElementById("all-table");
    var text = document.getElementById("filter-text");
    var verdict = document.getElementById("filter-verdict");
    var count = document.getElementById("filter-count");
    if (!table || !text || !verdict || !count) return;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var haystacks = rows.map(function (row) { return row.textContent.toLowerCase(); });
    var verdictColumn = table.querySelector("th[data-key=verdict]").cellIndex;
    var verdicts = rows.map(function (row) { return row.cells[verdictColumn].textContent.trim(); });
    function apply() {
      var needle = text.value.trim().toLowerCase();
      var wanted = verdict.value;
      var shown = 0;
      rows.forEach(function (row, i) {
        var visible = (!wanted || verdicts[i] === wanted) &&
          (!needle || haystacks[i].indexOf(needle) !== -1);
        row.hidden = !visible;
        if (visible) shown++;
      });
      count.textContent = shown + " of " + rows.length + " queries";
    }
    text.addEventListener("input", apply);
    verdict.addEventListener("change", apply);
  }

  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
  }

  document.querySelectorAll("table.sortable").forEach(makeSortable);
  setUpFilter();
  openTarget();
  window.addEventListener("hashchange", openTarget);
  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target instanceof Element && target.matches("td.sql")) target.classList.toggle("open");
  });
})();
