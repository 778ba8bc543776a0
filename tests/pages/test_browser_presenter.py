"""Real browser: presenter mode is for the projector (issue 28 part 6). At 1280 x 720 with
``?present=1`` the toy page's map and its objective-space panel are side by side and whole on the
first screen with their play controls, under the header (which never covers them), the settings
folded into a one-line drawer that opens on demand, the figures' axes and legend in large type; the
Jacobian descent page's properties table is whole on the first screen; the lesson's step 2 has the
objective-space panel beside its map, moving with Step; basin maps share one size on one grid (3 a
row), also at 1440 px. Screenshots in ``test-artifacts/present_*.png``; the lesson's animated steps,
the toy page, Jacobian descent and the basin maps at 1280 x 720 (presenter), 1440 x 900, 1920 x 1080
and 800 wide in ``test-artifacts/screen_*.png`` (the lesson's animation stepped at each).
"""
from __future__ import annotations

import pytest

from tests.pages._browser import open_page, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

GEOMETRY = """(sel) => { const r = e => { if (!e) return null; const b = e.getBoundingClientRect();
    return {x: b.x, y: b.y, w: b.width, h: b.height, bottom: b.bottom}; };
  return {header: r(document.querySelector('[data-testid="stHeader"]')),
          figs: Array.from(document.querySelectorAll(sel)).map(r),
          stale: !!document.querySelector('[data-stale="true"]'),
          busy: !!document.querySelector('[data-testid="stStatusWidget"]'),
          font: parseFloat(getComputedStyle(document.documentElement).fontSize)}; }"""


def _settled(page, sel: str, n: int = 1, what: str = "the figures"):
    """The geometry once ``n`` figures are drawn and unchanged for ~2 s (the toy page redraws once for
    its width class)."""
    seen: list[str] = []

    def ok():
        g = page.evaluate(GEOMETRY, sel)
        good = len(g["figs"]) >= n and not g["stale"] and not g["busy"] and all(f["h"] > 50 for f in g["figs"])
        seen.append(repr(g["figs"]) if good else "")
        return g if good and len(seen) >= 8 and len(set(seen[-8:])) == 1 else None

    return wait_until(ok, 150, what)


def test_toy_figure_and_controls_whole_on_the_first_screen_at_1280x720(browser, streamlit_server, artifacts_dir):
    ctx, page, errors = open_page(browser)
    try:
        page.goto(f"{streamlit_server['url']}/Toy_landscapes?present=1")
        g = _settled(page, ".st-key-toy_map .pcd-chart, .st-key-toy_obj .pcd-chart", n=2,
                     what="the toy map and its objective space in presenter mode")
        page.mouse.move(640, 5)
        page.screenshot(path=str(artifacts_dir / "present_toy_1280x720.png"))
        (fig, obj), header = g["figs"], g["header"]
        assert g["font"] >= 18  # large type
        for f in (fig, obj):  # both whole on the first screen, under the header
            assert f["y"] >= header["bottom"] - 1, ("the header covers a figure's top", header, f)
            assert f["bottom"] <= 720, ("a figure is not whole on the first screen", f)
        # side by side: the objective panel right of the map, on the same row, the map the larger
        assert obj["x"] >= fig["x"] + fig["w"] - 1 and abs(obj["y"] - fig["y"]) < 5, (fig, obj)
        assert fig["w"] > 700 and obj["w"] > 300 and fig["w"] + obj["w"] > 1100
        player = page.locator(".pcd-player").first.bounding_box()
        assert player and player["y"] >= max(fig["bottom"], obj["bottom"]) - 1, player
        assert player["y"] + player["height"] <= 720, player
        # the axes' and legend's type is scaled up for the room (the layout's font, 12 px by default)
        for key in ("toy_map", "toy_obj"):
            size = page.evaluate(f"() => document.querySelector('.st-key-{key} .js-plotly-plot')._fullLayout.font.size")
            assert size >= 14, (key, size)
        # the gradient inset folds below the controls, a chart of its own in larger type
        inset = page.locator(".st-key-toy_inset_fig .pcd-chart").first.bounding_box()
        assert inset and inset["y"] >= player["y"] + player["height"] - 1, inset
        # the settings: one line above the figure, folded; a click opens them (the widgets are there)
        drawer = page.locator("[class*='st-key-pcd_drawer_'] details").first
        assert drawer.get_attribute("open") is None
        box = drawer.bounding_box()
        assert box["height"] < 70 and box["y"] + box["height"] <= fig["y"]
        drawer.locator("summary").click()
        page.locator(".st-key-pcd_settings_main").first.wait_for(state="visible")
        assert page.locator(".st-key-pcd_settings_main [data-testid='stMultiSelect']").first.is_visible()
        page.screenshot(path=str(artifacts_dir / "present_toy_1280x720_settings_open.png"))
        # the animation still plays (Step moves the frame)
        page.locator(".pcd-b[data-act=fwd]").first.click()
        wait_until(lambda: page.locator(".pcd-player").first.get_attribute("data-frame") == "1", 30, "Step ▶")
        assert not errors, errors
    finally:
        ctx.close()


def test_jacobian_descent_figure_whole_on_the_first_screen_at_1280x720(browser, streamlit_server, artifacts_dir):
    """Page 06's properties table (~1530 px tall as one table) is reflowed in presenter mode into two
    tables side by side: its bottom is within the 720-px viewport, every method listed."""
    ctx, page, errors = open_page(browser)
    try:
        page.goto(f"{streamlit_server['url']}/Jacobian_descent?present=1")
        g = _settled(page, ".st-key-jd_props_chart .js-plotly-plot", what="the properties table in presenter mode")
        page.mouse.move(640, 5)
        page.screenshot(path=str(artifacts_dir / "present_jd_1280x720.png"))
        fig, header = g["figs"][0], g["header"]
        assert fig["y"] >= header["bottom"] - 1 and fig["bottom"] <= 720, ("not whole on the first screen", fig)
        assert fig["w"] > 1000
        tables = page.evaluate("() => document.querySelector('.st-key-jd_props_chart .js-plotly-plot').data"
                               ".map(t => t.cells.values[0].length)")
        assert len(tables) == 2 and sum(tables) >= 15, tables
        assert not errors, errors
    finally:
        ctx.close()


LESSON_STATE = """() => { const q = k => document.querySelector('.st-key-' + k + ' .js-plotly-plot');
  const tr = (g, name) => g && g._fullData && g._fullData.find(d => d.name === name);
  const xs = t => t ? JSON.stringify(Array.from(t.x || [])) + JSON.stringify(Array.from(t.y || [])) : null;
  const box = k => { const e = document.querySelector('.st-key-' + k + ' .pcd-chart'); if (!e) return null;
                     const b = e.getBoundingClientRect(); return {x: b.x, y: b.y, w: b.width, bottom: b.bottom}; };
  const n = g => g ? ((g._transitionData || {})._frames || []).length : 0;
  return {map: box('lesson_fig_saddle'), obj: box('lesson_obj_saddle'),
          frames: [n(q('lesson_fig_saddle')), n(q('lesson_obj_saddle')), n(q('lesson_inset_saddle'))],
          heads: xs(tr(q('lesson_fig_saddle'), 'positions')), obj_now: xs(tr(q('lesson_obj_saddle'), 'now')),
          inset: q('lesson_inset_saddle') && q('lesson_inset_saddle')._fullData ?  // its arrows and numbers
                 q('lesson_inset_saddle')._fullData.filter(d => d.xaxis === 'x2').map(d => xs(d) + JSON.stringify(d.text || ''))
                 .join('|') : null,
}; }"""


def _lesson_state(page) -> dict:
    """:data:`LESSON_STATE` and the frame the controls show (in the component's shadow root: a locator pierces it)."""
    return dict(page.evaluate(LESSON_STATE), frame=int(page.locator(".pcd-player").first.get_attribute("data-frame") or 0))


def _lesson_step2(page, url: str):
    """Open the lesson's step 2 and wait until its map, objective space and inset have their frames."""
    page.goto(url)
    player = page.locator(".pcd-player").first
    player.wait_for(timeout=180_000)
    seen: list[str] = []

    def ready():
        v = _lesson_state(page)
        ok = min(v["frames"]) > 50 and v["obj_now"] and v["map"] and v["obj"]
        seen.append(repr((v["frames"], v["map"], v["obj"])) if ok else "")
        return v if ok and len(seen) >= 8 and len(set(seen[-8:])) == 1 else None

    return player, wait_until(ready, 180, "the lesson's map, objective space and inset with their frames")


def _steps_together(page, player, first: dict) -> dict:
    """Step ▶ once: the map's heads, the objective-space points and the inset all move to frame 1."""
    player.locator("button[data-act=fwd]").click()
    return wait_until(lambda: (lambda v: v if v["frame"] == 1 and v["heads"] != first["heads"]
                               and v["obj_now"] != first["obj_now"] and v["inset"] != first["inset"] else None)(
        _lesson_state(page)), 60, "Step ▶ moving the map, the objective space and the inset together")


def test_lesson_step2_objective_space_beside_the_map_moves_with_step(browser, streamlit_server, artifacts_dir):
    """Issue 28 part 1 in the lesson: at 1280 x 720 presenter, step 2's objective-space panel is
    beside the map (same row, both whole on the first screen, the map larger than the old 364 px),
    on the map's frames, and Step moves its points with the map's heads and the inset."""
    ctx, page, errors = open_page(browser)
    try:
        player, first = _lesson_step2(page, f"{streamlit_server['url']}/Guided_lesson?step=2&present=1")
        m, o = first["map"], first["obj"]
        assert first["frames"][0] == first["frames"][1] == first["frames"][2], first["frames"]
        assert o["x"] >= m["x"] + m["w"] - 1 and abs(o["y"] - m["y"]) < 5, (m, o)
        assert m["bottom"] <= 720 and o["bottom"] <= 720 and m["w"] > 600, (m, o)
        assert first["frame"] == 0
        one = _steps_together(page, player, first)
        page.mouse.move(640, 5)
        page.screenshot(path=str(artifacts_dir / "present_lesson_step2_1280x720.png"))
        # the last frame: the objective panel's ending (end points, verdicts) shown
        player.locator(".pcd-scrub").fill(str(first["frames"][0] - 1))
        wait_until(lambda: page.evaluate("""() => (document.querySelector('.st-key-lesson_obj_saddle .js-plotly-plot')
            .layout.annotations || []).some(a => a.name === 'end label' && a.visible !== false)"""), 30,
                   "the objective space's verdicts at the last frame")
        assert one["obj_now"] != _lesson_state(page)["obj_now"]
        assert not errors, errors
    finally:
        ctx.close()


TAU_NOW = """() => { const g = document.querySelector('.st-key-lesson_obj_tau .js-plotly-plot');
  const t = g && g._fullData && g._fullData.find(d => d.name === 'now');
  const n = g ? ((g._transitionData || {})._frames || []).length : 0;
  return t && n > 50 ? JSON.stringify(Array.from(t.x)) + JSON.stringify(Array.from(t.y)) : null; }"""


def _tau_step_plays(page) -> None:
    """The lesson's step 7: once its objective-space panel has its frames, Step ▶ moves its points."""
    before = wait_until(lambda: page.evaluate(TAU_NOW), 60, "step 7's objective space and its frames")
    player = page.locator(".pcd-player").first
    player.locator("button[data-act=fwd]").click()
    wait_until(lambda: player.get_attribute("data-frame") == "1" and page.evaluate(TAU_NOW) != before, 60,
               "Step ▶ moving step 7's points")


VIEWS = [("lesson2", "Guided_lesson?step=2"), ("lesson7", "Guided_lesson?step=7"), ("toy", "Toy_landscapes"),
         ("jd", "Jacobian_descent"), ("basin", "Basin_maps?grid=25&steps=500")]
SIZES = [("1280x720_present", 1280, 720, True), ("1440x900", 1440, 900, False), ("1920x1080", 1920, 1080, False),
         ("800", 800, 1000, False)]


@pytest.mark.parametrize("size,w,h,present", SIZES, ids=[s[0] for s in SIZES])
def test_screens_of_the_animated_and_presenter_views(browser, streamlit_server, artifacts_dir, size, w, h, present):
    """Screenshots of the lesson's steps 2 and 7, the toy page, Jacobian descent and the basin maps
    at one size (looked at by hand: overlap, clipped text, tiny type); no exception, no page error,
    no figure wider than the window; the lesson's animation steps at every size (map, objective
    space and inset together)."""
    ctx, page, errors = open_page(browser, w, h)
    try:
        for name, path in VIEWS:
            url = f"{streamlit_server['url']}/{path}" + (("&" if "?" in path else "?") + "present=1" if present else "")
            if name == "lesson2":
                player, first = _lesson_step2(page, url)
                _steps_together(page, player, first)
            else:
                page.goto(url)
                _settled(page, ".pcd-chart, [data-testid='stPlotlyChart']", what=f"{name} at {size}")
            if name == "lesson7":  # step 7's runs in objective space play too: Step moves its points
                _tau_step_plays(page)
            page.mouse.move(w // 2, 5)
            page.wait_for_timeout(300)
            page.screenshot(path=str(artifacts_dir / f"screen_{name}_{size}.png"))
            assert page.locator("[data-testid='stException']").count() == 0, name
            wide = page.evaluate("() => Array.from(document.querySelectorAll('.pcd-chart, [data-testid=stPlotlyChart]'))"
                                 ".map(e => e.getBoundingClientRect().right).filter(r => r > window.innerWidth + 1)")
            assert not wide, (name, wide)
        assert not errors, errors
    finally:
        ctx.close()


@pytest.mark.parametrize("w,h,query,per_row", [(1280, 720, "&present=1", 3), (1440, 900, "", 2)])
def test_basin_maps_share_one_size_and_one_grid(browser, streamlit_server, artifacts_dir, w, h, query, per_row):
    ctx, page, _ = open_page(browser, w, h)
    try:
        page.goto(f"{streamlit_server['url']}/Basin_maps?grid=25&steps=500&methods=ws,pcd,mgda,pcgrad{query}")
        g = _settled(page, "[class*='st-key-basin_map_'] .js-plotly-plot", n=4, what="four basin maps")
        page.mouse.move(w // 2, 5)
        page.screenshot(path=str(artifacts_dir / f"present_basin_{w}x{h}.png"))
        figs = g["figs"]
        assert len({round(f["w"]) for f in figs}) == 1 and len({round(f["h"]) for f in figs}) == 1, figs
        xs = sorted({round(f["x"]) for f in figs})
        assert len(xs) == per_row, figs  # one grid: the columns line up from row to row
        rows = sorted({round(f["y"]) for f in figs})
        assert len(rows) == -(-len(figs) // per_row), figs
        if query:  # presenter mode: the first row whole on the first screen, under the header
            first = [f for f in figs if round(f["y"]) == rows[0]]
            assert all(f["y"] >= g["header"]["bottom"] - 1 and f["bottom"] <= h for f in first), first
    finally:
        ctx.close()
