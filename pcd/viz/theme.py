"""The visual identity shared by every figure: fonts, light layout, one colour (and dash, marker) per method,
objective colours, and a NumPy -> PNG data-URI renderer for landscape backgrounds.

Pure helpers (no Streamlit). Method colours live here (:data:`METHOD_COLORS`, :func:`method_style`)
so a method has the same colour on every page, table and plot.
"""
from __future__ import annotations

import base64
import functools
import io
import math
from typing import Any

import numpy as np
import plotly.graph_objects as go

import pcd.methods as registry
from pcd import _validate as V
from pcd.engine import DIAGNOSIS_WORDS, outcome_label  # noqa: F401  (its home is the engine)

FONT = "Inter, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"
WIDTH = 1100          # figures are sized for a laptop screen (the page is ~1250 px wide)
HEIGHT = 560
# ---- named colours: the one home of every colour a figure draws (GitHub Primer greys and accents)
INK = "#24292f"           # text, reference lines, outlines, the unpruned network
MUTED = "#57606a"         # secondary text; axis lines and ticks
AXIS = MUTED
GRID = "#e6e8eb"
FAINT = "#8c959f"         # faint guide lines, leader arrows
PALE = "#afb8c1"          # pale fills, dotted guides
BORDER = "#d0d7de"        # label borders, removed items
ZERO_LINE = "#c9ced4"
HEADER_FILL = "#f6f8fa"   # table headers
YES_FILL, NO_FILL = "#dafbe1", "#ffebe9"  # table cells: a property holds / fails
ALERT = "#cf222e"         # red: a threshold, a step cursor, what is cut
FRONT = "#8250df"         # purple: Pareto fronts and optimal sets
STAR_GOLD = "#ffd33d"     # the gold stars of CMS / optimal points
AMBER = "#bf8700"         # where the normalizer's eps takes over
GREEN = "#2ea043"         # a reachable / feasible set
PCD_RED = "#d62728"       # PCD's red (the hierarchical family's first colour)
# plain series colours of the figures that compare modes, not methods (Plotly's / D3's category10)
SERIES_BLUE, SERIES_ORANGE, SERIES_GREEN, SERIES_GREY = "#1f77b4", "#ff7f0e", "#2ca02c", "#7f7f7f"
# Basin-map outcome colours (pcd.engine.OUTCOMES; their words are pcd.engine.OUTCOME_WORDS)
OUTCOME_COLORS = {
    "cms": "#2da44e",                       # green: every objective stationary
    "conflict_equilibrium": "#cf222e",      # red: stalled, the gradients cancel
    "single_objective_minimum": "#d4a72c",  # amber: stopped at one objective's minimum
    "moving": "#54aeff",                    # blue: still moving at the budget
    "diverged": "#6e7781",                  # grey
}
# Objective colours (primary, secondary 1, 2, ...): distinct from the method palette's accents.
OBJECTIVE_COLORS = ("#24292f", "#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e", "#6e7781", "#953800")
# Light sequential colour map for backgrounds (low = pale, high = dark): control points.
_CMAP = np.array([
    [247, 251, 255], [222, 235, 247], [198, 219, 239], [158, 202, 225],
    [107, 174, 214], [66, 146, 198], [33, 113, 181], [8, 69, 148],
], dtype=np.float64)


# ---- method colours and styles -------------------------------------------------------------
# Every method family (:data:`pcd.methods.FAMILIES`) has its own band of CIELAB colours (hue,
# lightness and chroma ranges, below); a family's methods take, in the family's display order, the
# points of a greedy farthest-point sequence in that band (Gonzalez 1985), the distance being the
# smallest ΔE*ab under normal vision and simulated deuteranopia, protanopia and tritanopia (Machado,
# Oliveira & Fernandes 2009, severity 1). The sequence does not depend on the family's size, so a new
# method takes the next point of its family's sequence: no hand-picked entry. The bands keep the
# families apart under the three simulations too (red-green deficiencies see lightness and the
# blue-yellow axis: hierarchical is dark and saturated, loss weighting light, constrained muted);
# tests/viz/test_theme_palette.py checks the distances. PCD keeps its red (the hierarchical
# family's first point). Each method also gets a line dash (its position in its family) and a
# marker symbol (its family's), so methods stay distinguishable where colours are close.
CVD: dict[str, np.ndarray] = {  # Machado et al. (2009), severity 1.0, applied in linear sRGB
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
#: family -> ((hue low, hue high) in degrees, (L* low, high), (C* low, high)) of its colours
FAMILY_BANDS: dict[str, tuple[tuple[float, float], tuple[float, float], tuple[float, float]]] = {
    "hierarchical": ((20.0, 75.0), (34.0, 52.0), (35.0, 90.0)),          # reds, dark oranges
    "gradient aggregation": ((170.0, 300.0), (31.0, 70.0), (20.0, 85.0)),  # teals, blues, violets
    "loss weighting": ((85.0, 160.0), (56.0, 72.0), (30.0, 80.0)),       # light greens (no amber: g3)
    "constrained": ((0.0, 357.5), (40.0, 72.0), (0.0, 12.0)),            # muted greys and browns
}
# The objective colours a figure shows next to the methods (g1 ink, g2 blue, g3 amber: pages 01 and
# 00) are kept out of every band: no method colour within this ΔE of them, in any of the four visions.
RESERVED_OBJECTIVES = 3
RESERVED_DISTANCE = 15.0
FAMILY_ANCHORS = {"hierarchical": PCD_RED}  # a family's first colour where it is fixed (PCD's red)
FAMILY_SYMBOLS = {"hierarchical": "circle", "gradient aggregation": "square", "loss weighting": "diamond",
                  "constrained": "triangle-up"}
FAMILY_GLYPHS = {"hierarchical": "●", "gradient aggregation": "■", "loss weighting": "◆", "constrained": "▲"}
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
# The constrained baselines of pcd.train / pcd.experiments (page 07), not registry methods.
CONSTRAINED_BASELINES = ("lagrangian", "auglag", "nupi", "gda", "penalty", "prox")
REFERENCE_COLORS = {"unpruned": INK}  # references, not methods: the unpruned network (pruning lab)
# Display names of the pruning runs' baselines that are not registry methods (pcd.train.catalog's
# SPECIAL_METHOD_NAMES): figures name them without importing the training code.
BASELINE_LABELS = {"unpruned": "Unpruned (primary only)", "prox": "Proximal group lasso",
                   "lagrangian": "Lagrangian (Cooper)"}
UNKNOWN_COLOR = "#444444"
_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
_WHITE = np.array([0.95047, 1.0, 1.08883])  # D65


def _linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def lab(hexes: Any, vision: str = "normal") -> np.ndarray:
    """CIELAB (D65) ``[N, 3]`` of ``"#rrggbb"`` colours as seen with ``vision`` (``"normal"`` or a
    key of :data:`CVD`: the simulation is applied in linear sRGB, then clipped)."""
    rgb = np.array([[int(str(h)[i:i + 2], 16) for i in (1, 3, 5)] for h in hexes], dtype=np.float64) / 255.0
    return _lab_of_linear(_linear(rgb).reshape(-1, 3), vision)


def _lab_of_linear(lin: np.ndarray, vision: str) -> np.ndarray:
    if vision != "normal":
        lin = np.clip(lin @ CVD[vision].T, 0.0, 1.0)
    t = (lin @ _XYZ.T) / _WHITE
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=-1)


def _band_candidates(family: str) -> tuple[np.ndarray, np.ndarray]:
    """The band's sRGB colours on a grid (2 L*, 5 C*, 2.5 degrees), rounded to 8 bits: ``[N, 3]`` in
    [0, 1] and their CIELAB under the four visions ``[4, N, 3]``."""
    (h0, h1), (l0, l1), (c0, c1) = FAMILY_BANDS[family]
    L, C, H = np.meshgrid(np.arange(l0, l1 + 1e-9, 2.0), np.arange(c0, c1 + 1e-9, 5.0),
                          np.arange(h0, h1 + 1e-9, 2.5), indexing="ij")
    fy = (L.ravel() + 16) / 116
    f = np.stack([fy + C.ravel() * np.cos(np.radians(H.ravel())) / 500, fy,
                  fy - C.ravel() * np.sin(np.radians(H.ravel())) / 200], axis=-1)
    lin = (np.where(f > 0.206893, f ** 3, (f - 16 / 116) / 7.787) * _WHITE) @ np.linalg.inv(_XYZ).T
    lin = lin[((lin >= 0.0) & (lin <= 1.0)).all(axis=1)]  # inside the sRGB gamut
    srgb = np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055)
    srgb = np.unique(np.round(srgb * 255.0), axis=0) / 255.0
    labs = np.stack([_lab_of_linear(_linear(srgb), v) for v in ("normal", *CVD)])
    return srgb, labs


def _hex(rgb: np.ndarray) -> str:
    return "#" + "".join(f"{int(round(float(v) * 255)):02x}" for v in rgb)


@functools.cache
def family_palette(family: str, n: int) -> tuple[str, ...]:
    """The first ``n`` colours of ``family``'s sequence (farthest-point in its band, see above):
    the first is the family's anchor (PCD's red) or the band's most saturated colour near L* = 50;
    each next one is the candidate farthest, in the worst of the four visions, from those before."""
    V.choice(family, "method family", tuple(FAMILY_BANDS))
    n = V.integer(n, "palette size", low=0, high=256)
    srgb, labs = _band_candidates(family)
    far = np.stack([lab(OBJECTIVE_COLORS[:RESERVED_OBJECTIVES], v) for v in ("normal", *CVD)])  # [4, R, 3]
    keep = np.linalg.norm(labs[:, :, None] - far[:, None], axis=-1).min(axis=(0, 2)) >= RESERVED_DISTANCE
    srgb, labs = srgb[keep], labs[:, keep]
    anchor = FAMILY_ANCHORS.get(family)
    if anchor is not None:
        first = np.stack([lab([anchor], v) for v in ("normal", *CVD)])  # [4, 1, 3]
        out = [anchor]
    else:
        i0 = int(np.argmax(np.hypot(labs[0, :, 1], labs[0, :, 2]) - np.abs(labs[0, :, 0] - 50.0)))
        first = labs[:, i0:i0 + 1]
        out = [_hex(srgb[i0])]
    dmin = np.linalg.norm(labs - first, axis=-1).min(axis=0)
    while len(out) < n:
        i = int(np.argmax(dmin))
        out.append(_hex(srgb[i]))
        dmin = np.minimum(dmin, np.linalg.norm(labs - labs[:, i:i + 1], axis=-1).min(axis=0))
    return tuple(out[:n])


def family_members() -> dict[str, list[str]]:
    """Family -> the names that take its colours, in order: the registry's methods
    (:func:`pcd.methods.families`), then, for ``"constrained"``, :data:`CONSTRAINED_BASELINES`."""
    out = registry.families()
    out["constrained"] = out["constrained"] + [n for n in CONSTRAINED_BASELINES if n not in out["constrained"]]
    return out


def _styles() -> dict[str, dict[str, str]]:
    styles: dict[str, dict[str, str]] = {}
    for fam, names in family_members().items():
        for i, (name, color) in enumerate(zip(names, family_palette(fam, len(names)))):
            styles[name] = {"color": color, "dash": DASHES[i % len(DASHES)], "symbol": FAMILY_SYMBOLS[fam],
                            "family": fam}
    return styles


#: name -> {"color", "dash", "symbol", "family"} for every method and constrained baseline
METHOD_STYLES: dict[str, dict[str, str]] = _styles()
#: name -> colour (one colour per method on every page, table and figure), references included
METHOD_COLORS: dict[str, str] = {**{n: s["color"] for n, s in METHOD_STYLES.items()}, **REFERENCE_COLORS}


def method_style(name: str) -> dict[str, str]:
    """The method's ``{"color", "dash", "symbol", "family"}``; a method registered after this module
    was imported takes its family's next style (recomputed), an unknown name a neutral one."""
    key = str(name).lower()
    if key not in METHOD_STYLES:
        try:
            registry.get(key)
        except ValueError:
            return {"color": REFERENCE_COLORS.get(key, UNKNOWN_COLOR), "dash": "solid", "symbol": "circle",
                    "family": ""}
        return _styles()[key]
    return METHOD_STYLES[key]


def method_color(name: str) -> str:
    """The method's colour (one colour per method everywhere)."""
    return method_style(name)["color"]


def by_family(names: Any) -> list[str]:
    """``names`` grouped by family (:data:`pcd.methods.FAMILIES` order), each family's in its
    display order; names of no family (references, unknown) last, as given."""
    rank = {n: i for i, n in enumerate(n for names_ in family_members().values() for n in names_)}
    names = list(names)
    return sorted(names, key=lambda n: (rank.get(str(n).lower(), len(rank)), names.index(n)))


def method_option_label(name: str) -> str:
    """A method as a picker shows it: its family's glyph (the marker of its figures) and display name."""
    fam = method_style(name)["family"]
    return f"{FAMILY_GLYPHS[fam]} {method_label(name)}" if fam else method_label(name)


def family_legend(names: Any = None) -> str:
    """One line per family present in ``names`` (default: every method): glyph, family, members."""
    names = [n for m in family_members().values() for n in m] if names is None else by_family(names)
    lines = []
    for fam in FAMILY_SYMBOLS:
        members = [method_label(n) for n in names if method_style(n)["family"] == fam]
        if members:
            lines.append(f"{FAMILY_GLYPHS[fam]} {fam}: {', '.join(members)}")
    return "  \n".join(lines)


def method_label(name: str) -> str:
    """The method's display name (``"pcd"`` -> ``"PCD"``); unknown names are returned as given."""
    try:
        return registry.get(name).display_name or str(name)
    except ValueError:
        return BASELINE_LABELS.get(str(name), str(name))


# The light background of a table cell that names an outcome (the toy page's end-point table), by the
# engine's diagnosis (the outcome's words are OUTCOME_WORDS').
OUTCOME_SHADES = {"cms": "#dafbe1", "conflict_equilibrium": "#ffebe9", "pareto_at_primary": "#ddf4ff",
                  "halted": "#fbefff", "held": "#fbefff", "diverged": "#fff8c5", "error": "#fff8c5"}


def outcome_shade(text: str) -> str:
    """The :data:`OUTCOME_SHADES` colour of a cell whose text starts with an outcome's short words
    (``"stalled: gradients cancel at step 12"``), ``""`` when it names none."""
    t = str(text)
    return next((OUTCOME_SHADES[k] for k, words in DIAGNOSIS_WORDS.items()
                 if k in OUTCOME_SHADES and t.startswith(words[0])), "")


def objective_color(k: int) -> str:
    """Colour of objective ``k`` (0 = primary)."""
    if int(k) < 0:
        raise ValueError(f"objective index must be >= 0, got {k}")
    return OBJECTIVE_COLORS[int(k) % len(OBJECTIVE_COLORS)]


def rgba(hex_color: str, alpha: float) -> str:
    """``"#rrggbb"`` -> ``"rgba(r,g,b,alpha)"``."""
    h = str(hex_color).lstrip("#")
    if len(h) != 6:
        raise ValueError(f"colour must be '#rrggbb', got {hex_color!r}")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{float(alpha):g})"


def base_layout(title: str | None = None, height: int = HEIGHT, width: int | None = None, **extra: Any) -> dict:
    """Layout defaults: white background, readable fonts, light grid, legend on top."""
    layout: dict[str, Any] = dict(
        template="plotly_white",
        font=dict(family=FONT, size=14, color=INK),
        height=int(height),
        margin=dict(l=60, r=20, t=60 if title else 30, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.01, xanchor="left", x=0.0,
                    bgcolor="rgba(255,255,255,0.7)"),
        hoverlabel=dict(font=dict(family=FONT, size=13)),
        paper_bgcolor="white",
        plot_bgcolor="white",
    )
    if width is not None:
        layout["width"] = int(width)
    if title:
        layout["title"] = dict(text=title, x=0.01, xanchor="left", font=dict(size=17))
    layout.update(extra)
    return layout


def style_axes(fig: go.Figure) -> go.Figure:
    """Light grid lines and axis colours on every axis of ``fig``."""
    fig.update_xaxes(showgrid=True, gridcolor=GRID, zeroline=False, linecolor=AXIS, ticks="outside",
                     tickcolor=AXIS)
    fig.update_yaxes(showgrid=True, gridcolor=GRID, zeroline=False, linecolor=AXIS, ticks="outside",
                     tickcolor=AXIS)
    return fig


def colorize(values: Any) -> np.ndarray:
    """Map values in ``[0, 1]`` (NaN allowed -> white) to RGB uint8 ``[..., 3]`` with the light map."""
    v = np.asarray(values, dtype=np.float64)
    nan = ~np.isfinite(v)
    v = np.clip(np.where(nan, 0.0, v), 0.0, 1.0)
    pos = v * (len(_CMAP) - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, len(_CMAP) - 1)
    frac = (pos - lo)[..., None]
    rgb = _CMAP[lo] * (1 - frac) + _CMAP[hi] * frac
    rgb[nan] = 255.0
    return np.round(rgb).astype(np.uint8)


def png_data_uri(rgb: Any) -> str:
    """An RGB(A) uint8 image ``[H, W, 3|4]`` (row 0 = top) as a ``data:image/png;base64,...`` URI."""
    arr = np.asarray(rgb)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4) or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"image must have shape [H, W, 3] or [H, W, 4], got {arr.shape}")
    if arr.dtype != np.uint8:
        raise ValueError(f"image must be uint8, got {arr.dtype}")
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr, mode="RGBA" if arr.shape[2] == 4 else "RGB").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def to_png_bytes(fig: go.Figure, scale: float = 2.0) -> bytes | None:
    """Static PNG export when an offline renderer (kaleido + Chromium) is available, else ``None``.

    Never raises for a missing or broken exporter: PNG export is optional.
    """
    try:
        import kaleido  # noqa: F401
    except Exception:
        return None
    try:
        return fig.to_image(format="png", scale=scale)
    except Exception:
        return None


_TYPED_DTYPES = {"float32": "f4", "float64": "f8", "int8": "i1", "int16": "i2", "int32": "i4",
                 "uint8": "u1", "uint16": "u2", "uint32": "u4"}
_TYPED_BY_DTYPE = {np.dtype(k): v for k, v in _TYPED_DTYPES.items()}  # str(dtype) per array was ~1/3 of the walk


def typed_arrays(obj: Any) -> Any:
    """``obj`` (a figure spec: nested dicts / lists) with every numeric NumPy array replaced by
    Plotly.js's typed-array form ``{"dtype", "bdata"}`` (base64 of the raw bytes; float64 kept,
    int64 / bool narrowed to int32 / uint8, which Plotly.js reads natively). Object arrays
    become lists; a non-finite number outside an array becomes None (JSON has none). What Plotly's own ``to_dict`` does per array, done once, so building and
    serializing a figure with hundreds of animation frames does not walk every array again."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "b":
            obj = obj.astype(np.uint8)
        elif obj.dtype.kind in "iu" and obj.dtype.itemsize == 8:
            obj = obj.astype(np.int32) if obj.size == 0 or np.abs(obj).max() < 2**31 else obj.astype(np.float64)
        code = _TYPED_BY_DTYPE.get(obj.dtype)
        if code is None or obj.ndim != 1:
            return typed_arrays(obj.tolist())
        return {"dtype": code, "bdata": base64.b64encode(np.ascontiguousarray(obj).tobytes()).decode("ascii")}
    if isinstance(obj, dict):
        return {k: typed_arrays(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [typed_arrays(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None  # JSON has no NaN / inf: a gap, as Plotly's own encoder writes it
    return obj


def figure_from_spec(spec: dict) -> go.Figure:
    """A ``go.Figure`` from a plain spec (``{"data", "layout", "frames"}``) built by one of the
    :mod:`pcd.viz` builders, without Plotly's per-property validation (the builders are tested with
    it on) and with arrays in typed form (:func:`typed_arrays`): ~10x cheaper to build, serialize
    (``st.plotly_chart``) and export than validating ~200 frames of NumPy arrays."""
    return go.Figure(_plain_spec(spec), _validate=False)


def _plain_spec(spec: dict) -> dict:
    """``spec`` with typed arrays (:func:`typed_arrays`) and its template *name* resolved to the
    template (Plotly.js does not know names; as validation would)."""
    import plotly.io as pio

    plain = typed_arrays(spec)
    layout = plain.setdefault("layout", {})
    tpl = layout.get("template")
    if isinstance(tpl, str):
        layout["template"] = pio.templates[tpl].to_plotly_json()
    return plain


def plain_array(value: Any) -> np.ndarray:
    """The NumPy array behind a figure property: a typed-array dict (:func:`typed_arrays`), a
    list or an array (the inverse of :func:`typed_arrays` for one array; for tests and readers)."""
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        inv = {v: k for k, v in _TYPED_DTYPES.items()}
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=inv[value["dtype"]]).copy()
    return np.asarray(value)


class FrozenFigure:
    """A figure for :func:`pcd.ui.chart.plotly_chart`, serialized once from its plain spec
    (``{"data", "layout", "frames"}`` of a :mod:`pcd.viz` builder) WITHOUT a ``go.Figure``: for the
    toy map's 100 animation frames, building Plotly's objects for ~2,300 frame traces and serializing
    them back cost ~0.4-0.6 s of a settings change; this is one pass of :func:`typed_arrays` and one
    ``json.dumps`` (~20 ms). What a page reads of it: ``spec`` (the JSON), ``height``, ``trace_types``,
    ``frame_names``, ``meta`` (``layout.meta``) and ``figure()`` (a ``go.Figure`` of the same spec,
    for a consumer that needs one). A cache keeps it; nobody changes it."""

    __slots__ = ("spec", "height", "trace_types", "frame_names", "meta")

    def __init__(self, spec: dict) -> None:
        import json

        plain = _plain_spec(spec)
        layout = plain["layout"]
        self.spec: str = json.dumps(plain, separators=(",", ":"), allow_nan=False)
        height = layout.get("height")
        self.height: int | None = int(height) if isinstance(height, (int, float)) else None
        self.trace_types: frozenset[str] = frozenset(str(t.get("type") or "scatter") for t in plain.get("data", []))
        self.frame_names: list[str] = [str(f.get("name")) for f in plain.get("frames") or []]
        self.meta: Any = layout.get("meta")

    def figure(self) -> go.Figure:
        """The same figure as a ``go.Figure`` (not validated)."""
        import json

        return go.Figure(json.loads(self.spec), _validate=False)
