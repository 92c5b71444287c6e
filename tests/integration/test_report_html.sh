#!/usr/bin/env bash
# `kfleet run --format html -o FILE` on the quickstart: one self-contained
# page, and what a real browser makes of it. Headless Chromium loads the
# file, runs its script (the table's sorting marks the table when it is
# wired) and dumps the DOM: the charts and the table must be there. Its
# screenshot must not be a blank page. Chromium is a test dependency
# (deploy/install-deps.sh): without it this test fails, it does not skip.
source "$(dirname "$0")/lib.sh"

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || fail "no $CHROMIUM: the HTML report is checked in a real browser; run deploy/install-deps.sh"

H="$T/report.html"
"$KFLEET" run "$KF_SRC/examples/quickstart.yaml" --format html -o "$H" >"$T/run.out" 2>"$T/run.log" ||
  fail "kfleet run exited $?"
[ -s "$H" ] || fail "no report written to $H"
[ "$(head -c 15 "$H")" = "<!DOCTYPE html>" ] || fail "not an HTML page"
grep -q '<table id="kf-results">' "$H" || fail "no results table"
n=$(grep -o '<svg class="kf-bars"' "$H" | wc -l)
[ "$n" -eq 2 ] || fail "want one bar chart per kernel (triad, matmul), got $n"
# The quickstart's CPU nodes have a copy ceiling (host memcpy): a roofline each.
n=$(grep -o '<svg class="kf-roofline"' "$H" | wc -l)
[ "$n" -ge 1 ] || fail "no roofline"
rows=$(grep -o '<details>' "$H" | wc -l)
[ "$rows" -eq 9 ] || fail "want 9 rows (3 triad + 6 matmul configurations), got $rows"
grep -q "sample_seconds" "$H" && fail "the page embeds sample_seconds"
grep -Eq '(src|href)="(https?:)?//' "$H" && fail "the page loads something from the network"
# No number written as nan or inf (the page's script is left out: its code
# may say null).
sed '/^<script>$/,$d' "$H" | grep -Eiwq 'nan|inf|null' && fail "a nan, inf or null in the page"
pass "page written: $(wc -c <"$H") bytes, $rows rows"

chrome() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d "$T/chromium.XXXXXX")" "$@" 2>>"$T/chromium.log"
}
chrome --dump-dom "file://$H" >"$T/dom.html" || fail "chromium could not load the page"
grep -q 'id="kf-results"' "$T/dom.html" || fail "no results table in the DOM"
grep -q 'data-sortable="yes"' "$T/dom.html" || fail "the table's script did not run"
for c in kf-bars kf-roofline; do
  grep -q "<svg class=\"$c\"" "$T/dom.html" || fail "no $c chart in the DOM"
done
pass "chromium rendered the table, bar charts and rooflines, and ran the script"

# Clicking the median's header sorts the rows by it, up then down.
cat "$H" - >"$T/click.html" <<'EOF'
<script>
(function () {
  var t = document.getElementById('kf-results'), th = t.tHead.rows[0].cells, col = -1, got = [];
  for (var i = 0; i < th.length; i++) if (th[i].textContent === 'median') col = i;
  function order() {
    var v = Array.prototype.map.call(t.tBodies[0].rows, function (r) {
      return +r.cells[col].getAttribute('data-sort');
    });
    for (var j = 1, up = 1, down = 1; j < v.length; j++) {
      up = up && v[j - 1] <= v[j];
      down = down && v[j - 1] >= v[j];
    }
    return v[0] === v[v.length - 1] ? 'flat' : up ? 'up' : down ? 'down' : 'unsorted';
  }
  th[col].click();
  got.push(order());
  th[col].click();
  got.push(order());
  document.body.setAttribute('data-test-sorted', got.join(' '));
})();
</script>
EOF
chrome --dump-dom "file://$T/click.html" >"$T/click-dom.html" || fail "chromium could not load the page"
grep -q 'data-test-sorted="up down"' "$T/click-dom.html" ||
  fail "clicking the median header did not sort: $(grep -o 'data-test-sorted="[^"]*"' "$T/click-dom.html")"
pass "a click on a header sorts by it, a second reverses"

chrome --hide-scrollbars --screenshot="$T/shot.png" --window-size=1400,2000 "file://$H" >/dev/null ||
  fail "chromium could not take a screenshot"
[ -s "$T/shot.png" ] || fail "no screenshot"
[ "$(head -c 4 "$T/shot.png" | tail -c 3)" = "PNG" ] || fail "the screenshot is not a PNG"
size=$(stat -c %s "$T/shot.png")
# A blank 1400x2000 page compresses to a few kB; the report's is ~100 kB.
[ "$size" -gt 30000 ] || fail "screenshot of $size bytes: a blank page?"
pass "screenshot: $size bytes"

# A kernel that fails validation beside one that passes: its row is in the
# table (marked failed, its profile skipped, no figure), and no chart in the
# rendered page draws it as a result.
W="$T/wrong.html"
rc=0
"$KFLEET" run "$KF_SRC/tests/data/sweeps/wrong_and_right.yaml" --format html -o "$W" \
  >"$T/wrong.out" 2>"$T/wrong.log" || rc=$?
[ $rc -eq 1 ] || fail "a sweep with a wrong kernel exited $rc, expected 1"
chrome --dump-dom "file://$W" >"$T/wrong-dom.html" || fail "chromium could not load the page"
python3 - "$T/wrong-dom.html" <<'PY' || fail "the page draws the failed configuration"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
svgs = re.findall(r"<svg\b.*?</svg>", dom, re.S)
assert svgs, "no chart at all"
drawn = [s[:80] for s in svgs if re.search(r"\bwrong\b", s)]
assert not drawn, f"{len(drawn)} chart(s) draw the wrong kernel: {drawn}"
assert any(re.search(r"\btriad\b", s) for s in svgs), "the passing kernel is not drawn"
rows = re.findall(r"<tr class=\"failed\">(.*?)</tr>", dom, re.S)
assert len(rows) == 1 and "wrong" in rows[0], f"want the wrong kernel's row marked failed, got {len(rows)}"
assert "profile skipped" in rows[0], "the failed row does not say its profile was skipped"
sorts = [v for v in re.findall(r"data-sort=\"([^\"]*)\"", rows[0]) if v]
assert not sorts, f"the failed row shows figures: {sorts}"
print("ok")
PY
pass "a failed configuration: row marked, profile skipped, in no chart (checked in chromium)"
