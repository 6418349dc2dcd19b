// The entity page's neighbourhood, drawn by cytoscape from the elements the server put in the page.
// Clicking (or Enter on the focused list links) opens the neighbour's page; nothing here fetches data.
// The fragment arrives by htmx after the page loads, so the graph is drawn when it has settled.
(function () {
  "use strict";
  function draw() {
  var box = document.getElementById("graph");
  var data = document.getElementById("graph-elements");
  if (!box || !data || box.getAttribute("data-drawn") || typeof window.cytoscape !== "function") return;
  var cy = window.cytoscape({
    container: box,
    elements: JSON.parse(data.textContent),
    layout: { name: "concentric", concentric: function (n) { return 10 - n.data("depth"); }, levelWidth: function () { return 1; }, minNodeSpacing: 60, animate: false },
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 11, "text-valign": "bottom", "text-margin-y": 4, "text-background-color": "#fff", "text-background-opacity": 0.85, "text-background-padding": 2, "background-color": "#2b6cb0", color: "#1a202c", width: 22, height: 22 } },
      { selector: "node[?centre]", style: { "background-color": "#c05621", width: 32, height: 32, "font-weight": "bold" } },
      { selector: "node[?hub]", style: { shape: "star", "background-color": "#744210", width: 30, height: 30 } },
      { selector: "edge", style: { label: "data(label)", "font-size": 8, "text-background-color": "#fff", "text-background-opacity": 0.85, width: "mapData(evidence, 1, 10, 1, 5)", "line-color": "#a0aec0", "target-arrow-shape": "triangle", "target-arrow-color": "#a0aec0", "curve-style": "bezier", color: "#4a5568", "text-rotation": "autorotate" } }
    ]
  });
  cy.on("tap", "node", function (evt) {
    var node = evt.target;
    if (node.data("centre")) return;
    window.location.href = "/ui/entities/" + encodeURIComponent(node.id()) + window.location.search;
  });
  window.kgragGraph = cy; // for the browser tests and the console
  box.setAttribute("data-drawn", String(cy.nodes().length)); // drawn, with this many entities
  }
  document.addEventListener("htmx:afterSettle", draw);
  document.addEventListener("DOMContentLoaded", draw);
})();
