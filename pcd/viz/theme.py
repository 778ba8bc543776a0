"""The visual identity shared by every figure: fonts, light layout, one colour per method,
objective colours, and a NumPy -> PNG data-URI renderer for landscape backgrounds.

Pure helpers (no Streamlit). Method colours live here (:data:`METHOD_COLORS`) so a method has
the same colour on every page, table and plot.
"""
from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np
import plotly.graph_objects as go

import pcd.methods as registry

FONT = "Inter, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"
WIDTH = 1100          # figures are sized for a laptop screen (the page is ~1250 px wide)
HEIGHT = 560
GRID = "#e6e8eb"
AXIS = "#57606a"
# Objective colours (primary, secondary 1, 2, ...): distinct from the method palette's accents.
OBJECTIVE_COLORS = ("#24292f", "#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e", "#6e7781", "#953800")
# Light sequential colour map for backgrounds (low = pale, high = dark): control points.
_CMAP = np.array([
    [247, 251, 255], [222, 235, 247], [198, 219, 239], [158, 202, 225],
    [107, 174, 214], [66, 146, 198], [33, 113, 181], [8, 69, 148],
], dtype=np.float64)


# One colour per method -- the symmetric baselines, PCD and the constrained baselines of page 07 --
# used on every page, table and figure. Chosen by farthest-point search in CIELAB under normal
# vision and simulated deuteranopia, protanopia and tritanopia (Machado et al. 2009), lightness
# 30-72 and moderate chroma so every colour reads on white; tests/viz/test_theme_palette.py checks
# the minimum pairwise distances. PCD keeps the strongest accent (red), the weighted sum grey.
METHOD_COLORS: dict[str, str] = {
    "pcd": "#d62728",
    "ws": "#6e7781",
    "mgda": "#3355cc",
    "pcgrad": "#ccaa00",
    "cagrad": "#33bb77",
    "famo": "#662299",
    "upgrad": "#ff88cc",
    "dualproj": "#99bb55",
    "imtlg": "#66aaee",
    "alignedmtl": "#5599aa",
    "nashmtl": "#554477",
    "graddrop": "#888844",
    "rgw": "#bb9999",
    "dbgd": "#cc7711",
    "auxinash": "#446611",
    # TorchJD's other aggregators (issue 27): a max-min search against the colours above (all four
    # visions, lightness 30-75); the family palette replaces them
    "config": "#8c2cfc",
    "fairgrad": "#342cc4",
    "gradvac": "#8c6cf4",
    "excessmtl": "#00c8d4",
    "crmogm": "#b81090",
    "modo": "#f0a48c",
    "sdmgrad": "#00709c",
    "krum": "#705450",
    "trimmedmean": "#1000fc",
    # constrained / specialised baselines (pcd.train, pcd.experiments, page 07)
    "lagrangian": "#7799ff",
    "auglag": "#558866",
    "nupi": "#aa66bb",
    "gda": "#882233",
    "penalty": "#995544",
    "prox": "#773355",
    # references, not methods: the unpruned network (pruning lab)
    "unpruned": "#24292f",
}
UNKNOWN_COLOR = "#444444"


def method_color(name: str) -> str:
    """The method's colour (one colour per method everywhere)."""
    return METHOD_COLORS.get(str(name).lower(), UNKNOWN_COLOR)


def method_label(name: str) -> str:
    """The method's display name (``"pcd"`` -> ``"PCD"``); unknown names are returned as given."""
    try:
        return registry.get(name).display_name or str(name)
    except ValueError:
        from pcd.train.catalog import SPECIAL_METHOD_LABELS

        return SPECIAL_METHOD_LABELS.get(str(name), str(name))


# Outcome names (the engine's one-word diagnosis in words). "primary_stationary" means two different
# things: PCD's deployed update d = d~ ||g_1|| / ||d~|| is zero wherever g_1 = 0 (a known limitation:
# the update halts), while a symmetric method there sits at a Pareto-stationary point of its own
# choosing (e.g. FAMO at the primary's minimum with the secondary > 0). They get different names.
OUTCOME_WORDS = {
    "cms": ("reached CMS", "reached CMS (every objective stationary)"),
    "conflict_equilibrium": ("stalled: gradients cancel", "stalled at a conflict equilibrium (the gradients cancel)"),
    "pareto_at_primary": ("Pareto-stationary at ∇f₁ = 0",
                          "ended where ∇f₁ = 0: Pareto-stationary, the secondary not at its optimum"),
    "halted": ("PCD halted: ∇f₁ = 0", "PCD's update halted: ∇f₁ = 0 zeroes its rescaled step (known limitation)"),
    "held": ("PCD held by a constraint", "PCD stopped: a secondary's τ constraint holds the primary back"),
    "moving": ("still moving", "still moving (no end point within the step budget)"),
    "diverged": ("diverged", "diverged"),
    "error": ("method error", "method error"),
}
HALTS_WHERE_PRIMARY_VANISHES = frozenset({"pcd"})  # deployed update rescaled to ||g_1||


def outcome_label(diagnosis: str, method: str | None = None, short: bool = False) -> str:
    """The outcome of a trajectory in words, from the engine's diagnosis and the method."""
    d = str(diagnosis)
    pcd_like = str(method or "").lower() in HALTS_WHERE_PRIMARY_VANISHES
    if d == "primary_stationary":
        d = "halted" if pcd_like else "pareto_at_primary"
    elif d == "conflict_equilibrium" and pcd_like:
        d = "held"  # PCD's primary keeps weight 1: it stops only where a constraint binds against it
    words = OUTCOME_WORDS.get(d)
    return d if words is None else words[0 if short else 1]


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
        font=dict(family=FONT, size=14, color="#24292f"),
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


def typed_arrays(obj: Any) -> Any:
    """``obj`` (a figure spec: nested dicts / lists) with every numeric NumPy array replaced by
    Plotly.js's typed-array form ``{"dtype", "bdata"}`` (base64 of the raw bytes; float64 kept,
    int64 / bool narrowed to int32 / uint8, which Plotly.js reads natively). Object arrays
    become lists. What Plotly's own ``to_dict`` does per array, done once, so building and
    serializing a figure with hundreds of animation frames does not walk every array again."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "b":
            obj = obj.astype(np.uint8)
        elif obj.dtype.kind in "iu" and obj.dtype.itemsize == 8:
            obj = obj.astype(np.int32) if obj.size == 0 or np.abs(obj).max() < 2**31 else obj.astype(np.float64)
        code = _TYPED_DTYPES.get(str(obj.dtype))
        if code is None or obj.ndim != 1:
            return typed_arrays(obj.tolist())
        return {"dtype": code, "bdata": base64.b64encode(np.ascontiguousarray(obj).tobytes()).decode("ascii")}
    if isinstance(obj, dict):
        return {k: typed_arrays(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [typed_arrays(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def figure_from_spec(spec: dict) -> go.Figure:
    """A ``go.Figure`` from a plain spec (``{"data", "layout", "frames"}``) built by one of the
    :mod:`pcd.viz` builders, without Plotly's per-property validation (the builders are tested with
    it on) and with arrays in typed form (:func:`typed_arrays`): ~10x cheaper to build, serialize
    (``st.plotly_chart``) and export than validating ~200 frames of NumPy arrays."""
    import plotly.io as pio

    spec = typed_arrays(spec)
    layout = spec.setdefault("layout", {})
    tpl = layout.get("template")
    if isinstance(tpl, str):  # Plotly.js does not know template *names*: resolve as validation would
        layout["template"] = pio.templates[tpl].to_plotly_json()
    return go.Figure(spec, _validate=False)


def plain_array(value: Any) -> np.ndarray:
    """The NumPy array behind a figure property: a typed-array dict (:func:`typed_arrays`), a
    list or an array (the inverse of :func:`typed_arrays` for one array; for tests and readers)."""
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        inv = {v: k for k, v in _TYPED_DTYPES.items()}
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=inv[value["dtype"]]).copy()
    return np.asarray(value)
