"""``python -m pcd toy``: run methods from several starts on a 2-D landscape (PCD paper, Fig. 1).

Writes a JSON list, one object per (method, start) with ``method``, ``start``, ``end``,
``losses``, ``primary_grad_norm``, ``cms_residual``, ``pareto_residual``, ``stalled``,
``diverged`` (+ ``diverged_step``, ``diagnosis``). See :func:`pcd.experiments.synthetic.toy`.
"""
from __future__ import annotations

import argparse

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

    records = toy(problem=args.problem, methods=args.methods, steps=args.steps, lr=args.lr,
                  optimizer=args.optimizer, tau=args.tau, starts=parse_starts(args.starts), seed=args.seed)
    write_json(records, args.json)
    if args.html or args.gif:
        _write_map(args)
    return 0


def _write_map(args: argparse.Namespace) -> None:
    """The Toy landscapes page's map (the same builder, pcd.viz.toy.toy_map_figure) as standalone HTML
    (``--html``) and its animation as a GIF (``--gif``, :mod:`pcd.viz.export`)."""
    import pcd.problems as problems
    from pcd import _validate as V
    from pcd.experiments.synthetic import toy_run
    from pcd.experiments.toy import trajectory_gradients
    from pcd.viz import toy as toy_map
    from pcd.viz.export import SLIDE_SIZES, toy_gif
    from pcd.viz.stamp import figure_html

    html = V.writable_file(args.html, "--html") if args.html else None
    gif = V.writable_file(args.gif, "--gif") if args.gif else None
    if args.size not in SLIDE_SIZES:
        raise ValueError(f"--size must be one of {', '.join(SLIDE_SIZES)}, got {args.size!r}")
    prob = problems.make(args.problem)
    res = toy_run(args.problem, args.methods, args.steps, args.lr, args.optimizer, args.tau, parse_starts(args.starts),
                  seed=args.seed, record=200)
    bg = toy_map.toy_background(prob, toy_map.fit_bounds(res, prob.bounds))
    settings = {"problem": args.problem, "methods": res.methods, "tau": args.tau, "optimizer": args.optimizer,
                "lr": args.lr, "steps": args.steps}
    if html is not None:
        fig = toy_map.toy_map_figure(prob, res, bg, inset=trajectory_gradients(prob, res, 0), controls=True)
        html.write_text(figure_html(fig, settings), encoding="utf-8")
    if gif is not None:  # the page's animation for slides: its frames, the settings in a caption strip
        toy_gif(res, bg, size=SLIDE_SIZES[args.size], settings=settings, max_frames=toy_map.TOY_FRAMES, target=gif)


def register(subparsers) -> None:
    p = subparsers.add_parser("toy", help="methods x starts on a 2-D landscape (saddle2d, ...); JSON records",
                              description=__doc__.splitlines()[0])
    p.add_argument("--problem", default="saddle2d", help="problem name (see pcd.problems.available())")
    p.add_argument("--methods", default="pcd,ws,mgda,pcgrad,cagrad,famo", help="comma-separated method names")
    p.add_argument("--starts", default=None, help="start points 'x,y;x,y' (default: the problem's)")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write the page's animated map (standalone HTML, the Toy landscapes page's figure)")
    p.add_argument("--gif", default=None, metavar="FILE",
                   help="also write the map's animation as a GIF for slides (the settings in a caption strip)")
    p.add_argument("--size", default="1280x720", help="the GIF's size: 1280x720 (default) or 1920x1080")
    add_common(p)
    p.set_defaults(func=_run)
