package flame

// styleTmpl is every graph's style sheet; "#ID" becomes the graph's id so
// that graphs inlined in one page do not restyle each other. Generic font
// families only.
const styleTmpl = `
#ID text{font-family:monospace;font-size:11px;fill:#000}
#ID .title{font-size:17px;font-weight:bold}
#ID .sub,#ID .gone{font-size:12px;fill:#333}
#ID .ctl{cursor:pointer;fill:#0645ad;text-decoration:underline}
#ID .ctl.off{fill:#999;cursor:default}
#ID .matched{font-size:12px;fill:#a000a0}
#ID .f{cursor:pointer}
#ID .f text{pointer-events:none}
#ID .f rect{stroke:#fdfdfd;stroke-width:.5}
#ID .f:hover rect{stroke:#000;stroke-width:1}
#ID .f.h{display:none}
#ID .f.a{opacity:.5}
#ID .f.m rect{fill:rgb(230,0,230)}
`

// scriptTmpl is every graph's script, plain ES5 in one closure: its state
// is its own and it finds its elements under the graph's id. CONFIG becomes
// {id, pad, gw (graph width), cw (label char width), total (samples)}.
// Frames are <g class="f" data-s data-n data-d> with a title, a rect and a
// text; zoom sets the rects' x and width, class "h" hides, "a" marks an
// ancestor of the zoomed frame, "m" a search match.
const scriptTmpl = `(function () {
"use strict";
var C = CONFIG;
var svg = document.getElementById(C.id);
if (!svg) { return; }
function el(s) { return document.getElementById(C.id + "-" + s); }
var reset = el("reset"), search = el("search"), matched = el("matched"), details = el("details");
var frames = [];
var gs = el("frames").querySelectorAll("g.f");
for (var i = 0; i < gs.length; i++) {
	var g = gs[i], tip = g.querySelector("title").textContent;
	g.setAttribute("data-i", String(i));
	frames.push({g: g, r: g.querySelector("rect"), t: g.querySelector("text"),
		s: +g.getAttribute("data-s"), n: +g.getAttribute("data-n"), d: +g.getAttribute("data-d"),
		name: tip.slice(0, tip.lastIndexOf(" \u2014 ")), tip: tip});
}
function label(name, w) {
	var n = Math.floor((w - 6) / C.cw);
	if (n < 3) { return ""; }
	var cs = Array.from(name);
	if (cs.length <= n) { return name; }
	return cs.slice(0, n - 1).join("") + "\u2026";
}
function frameOf(t) {
	while (t && t !== svg) {
		if (t.classList && t.classList.contains("f")) { return frames[+t.getAttribute("data-i")]; }
		t = t.parentNode;
	}
	return null;
}
function zoom(z) {
	var zs = z ? z.s : 0, zn = z ? z.n : C.total, zd = z ? z.d : 0;
	frames.forEach(function (f) {
		var inside = f.d >= zd && f.s >= zs && f.s + f.n <= zs + zn;
		var anc = f.d < zd && f.s <= zs && f.s + f.n >= zs + zn;
		f.g.classList.toggle("h", !inside && !anc);
		f.g.classList.toggle("a", anc);
		if (!inside && !anc) { return; }
		var x = inside ? C.pad + (f.s - zs) / zn * C.gw : C.pad;
		var w = inside ? f.n / zn * C.gw : C.gw;
		f.r.setAttribute("x", x.toFixed(2));
		f.r.setAttribute("width", w.toFixed(2));
		f.t.setAttribute("x", (x + 3).toFixed(2));
		f.t.textContent = label(f.name, w);
	});
	reset.classList.toggle("off", !z || z.d === 0);
}
function find() {
	var p = window.prompt("Search frames (regular expression; empty clears):", "");
	if (p === null) { return; }
	var re = null;
	if (p !== "") {
		try { re = new RegExp(p); } catch (e) { matched.textContent = "bad regular expression: " + e.message; return; }
	}
	var spans = [];
	frames.forEach(function (f) {
		var m = re !== null && re.test(f.name);
		f.g.classList.toggle("m", m);
		if (m) { spans.push([f.s, f.s + f.n]); }
	});
	if (re === null) { matched.textContent = ""; return; }
	spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
	var sum = 0, end = 0;
	spans.forEach(function (s) {
		if (s[1] <= end) { return; }
		sum += s[1] - Math.max(s[0], end);
		end = s[1];
	});
	matched.textContent = "matched " + (100 * sum / C.total).toFixed(1) + " % of samples (" + p + ")";
}
svg.addEventListener("click", function (e) {
	if (e.target === reset) { zoom(null); return; }
	if (e.target === search) { find(); return; }
	var f = frameOf(e.target);
	if (f) { zoom(f.d === 0 ? null : f); }
});
svg.addEventListener("mouseover", function (e) {
	var f = frameOf(e.target);
	details.textContent = f ? f.tip : "";
});
})();
`
