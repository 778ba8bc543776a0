"""``python -m pcd toy``: run methods from several starts on a 2-D landscape (PCD paper, Fig. 1).

Writes a JSON list, one object per (method, start) with ``method``, ``start``, ``end``,
``losses``, ``primary_grad_norm``, ``cms_residual``, ``pareto_residual``, ``stalled``,
``diverged`` (+ ``diverged_step``, ``diagnosis``). See :func:`pcd.experiments.synthetic.toy`.
"""
from __future__ import annotations

import argparse
from typing import Any

from pcd.cli import UsageError, write_json


def parse_starts(text: str | None):
    """``"-2.55,0.4;-2.9,0.12"`` -> [[-2.55, 0.4], [-2.9, 0.12]] (None -> problem defaults)."""
    if text is None:
        return None
    pts = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        try:
            pts.append([float(v) for v in part.split(",")])
        except ValueError:
            raise UsageError(f"--starts: expected 'x,y;x,y;...', got {text!r}") from None
    if not pts:
        raise UsageError("--starts: give at least one point 'x,y'")
    return pts


def add_common(p: argparse.ArgumentParser, steps: int = 3000, tau: bool = True) -> None:
    p.add_argument("--steps", default=steps, help=f"optimizer steps (>= 1, default {steps})")
    p.add_argument("--lr", default=0.01, help="learning rate (> 0, default 0.01)")
    p.add_argument("--optimizer", default="adam", help="adam (default) or sgd")
    if tau:
        p.add_argument("--tau", default=0.3, help="PCD's tau in [0, 1] (default 0.3)")
    p.add_argument("--seed", default=0, help="seed of the stochastic methods (default 0)")
    p.add_argument("--json", default="-", metavar="FILE", help="output file ('-' = stdout, default)")


def _run(args: argparse.Namespace) -> int:
    from pcd.experiments.synthetic import toy

    targets = animation_targets(args)  # refused in one line before the run
    records = toy(problem=args.problem, methods=args.methods, steps=args.steps, lr=args.lr,
                  optimizer=args.optimizer, tau=args.tau, starts=parse_starts(args.starts), seed=args.seed)
    write_json(records, args.json)
    if args.html or targets:
        _write_map(args, targets)
    return 0


def add_animation_args(p: argparse.ArgumentParser, what: str) -> None:
    """``--gif F``, ``--mp4 F``, ``--size WxH``, ``--frames N``: the view's animation for slides."""
    from pcd.viz.toy import TOY_FRAMES

    p.add_argument("--gif", default=None, metavar="FILE",
                   help=f"also write {what} as a GIF for slides (the settings in a caption strip)")
    p.add_argument("--mp4", default=None, metavar="FILE",
                   help=f"also write {what} as an MP4 (H.264, yuv420p: PowerPoint/Keynote play it; needs PyAV)")
    p.add_argument("--size", default="1280x720",
                   help="the animation's size WxH, even sides: 1280x720 (default) or 1920x1080 for slides")
    p.add_argument("--frames", default=TOY_FRAMES, help=f"animation frames (2..1000, default {TOY_FRAMES})")


def animation_targets(args: argparse.Namespace) -> dict[str, Any]:
    """``{"gif": Path, "mp4": Path}`` of the requested files, with ``args.size`` / ``args.frames``
    checked (:func:`pcd.viz.export.check_export`) and PyAV's presence for ``--mp4``, all before any
    work is done: a bad value is one line (``error: ...``, exit 2)."""
    from pcd import _validate as V
    from pcd.viz.export import EncoderMissing, check_export, mp4_missing

    out = {fmt: V.writable_file(path, f"--{fmt}") for fmt in ("gif", "mp4")
           if (path := getattr(args, fmt, None))}
    if out:
        n = V.integer(args.frames, "--frames", low=2, high=V.LIMITS["frames"], strict=False)
        args.size, args.frames = check_export(V.frame_size(args.size, "--size"), n)
        if "mp4" in out and mp4_missing():
            raise EncoderMissing(f"--mp4: {mp4_missing()}")
    return out


def _write_map(args: argparse.Namespace, targets: dict[str, Any]) -> None:
    """The Toy landscapes page's map (the same builder, pcd.viz.toy.toy_map_figure) as standalone HTML
    (``--html``) and its animation -- the map, the objective-space panel beside it, the gradient
    inset of start ``--inset`` under it -- as GIF / MP4 (``--gif`` / ``--mp4``, :mod:`pcd.viz.export`)."""
    import pcd.problems as problems
    from pcd import _validate as V
    from pcd.experiments.synthetic import toy_run
    from pcd.experiments.toy import objective_space, trajectory_gradients
    from pcd.viz import toy as toy_map
    from pcd.viz.export import toy_animation
    from pcd.viz.stamp import figure_html

    html = V.writable_file(args.html, "--html") if args.html else None
    prob = problems.make(args.problem)
    frames = V.integer(args.frames, "--frames", low=2, high=V.LIMITS["frames"], strict=False)
    res = toy_run(args.problem, args.methods, args.steps, args.lr, args.optimizer, args.tau, parse_starts(args.starts),
                  seed=args.seed, record=max(200, 2 * frames))
    bg = toy_map.toy_background(prob, toy_map.fit_bounds(res, prob.bounds))
    settings = {"problem": args.problem, "methods": res.methods, "tau": args.tau, "optimizer": args.optimizer,
                "lr": args.lr, "steps": args.steps}
    if html is not None:
        fig = toy_map.toy_map_figure(prob, res, bg, inset=trajectory_gradients(prob, res, 0), controls=True)
        html.write_text(figure_html(fig, settings), encoding="utf-8")
    space = objective_space(prob, res, bg["grid"]) if res.losses.shape[-1] == 2 else None
    inset = V.integer(args.inset, "--inset", low=0, high=res.S, strict=False)
    grads = trajectory_gradients(prob, res, inset - 1) if inset else None
    for fmt, path in targets.items():  # the page's animation for slides: its frames, the settings in a caption strip
        toy_animation(res, bg, fmt, size=args.size, settings=settings, max_frames=frames, target=path, space=space,
                      grads=grads)


def register(subparsers) -> None:
    p = subparsers.add_parser("toy", help="methods x starts on a 2-D landscape (saddle2d, ...); JSON records",
                              description=__doc__.splitlines()[0])
    p.add_argument("--problem", default="saddle2d", help="problem name (see pcd.problems.available())")
    p.add_argument("--methods", default="pcd,ws,mgda,pcgrad,cagrad,famo", help="comma-separated method names")
    p.add_argument("--starts", default=None, help="start points 'x,y;x,y' (default: the problem's)")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write the page's animated map (standalone HTML, the Toy landscapes page's figure)")
    add_animation_args(p, "the map's animation with the objective-space panel")
    p.add_argument("--inset", default=1, help="the animation's gradient inset follows start N (1 = S1, the default; "
                                              "0 = no inset)")
    add_common(p)
    p.set_defaults(func=_run)
