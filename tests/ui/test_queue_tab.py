"""The runs table holds its row order while rows are selected (issue 29: the 2-second refresh
raced the selection), and takes its natural order again when nothing is selected."""
import random

from pcd.ui.queue_tab import natural_order, table_order


def _runs(*ids):
    return [{"id": i} for i in ids]


def test_natural_order_pins_running_runs_on_the_first_page_only():
    assert natural_order(_runs(9, 8, 7, 6), _runs(6), first_page=True) == [6, 9, 8, 7]
    assert natural_order(_runs(5, 4), _runs(6), first_page=False) == [5, 4]


def test_held_order_never_moves_a_shown_row():
    # selected rows stay where they were however the queue changes between two refreshes:
    # runs start and end (the pinned row changes), new runs are queued on top, runs leave the page
    rng = random.Random(0)
    alive = set(range(1, 31))
    order = natural_order(_runs(*sorted(alive, reverse=True)[:10]), _runs(3), first_page=True)
    for step in range(200):
        new_id = 31 + step
        alive.add(new_id)
        running = _runs(rng.choice(sorted(alive)))
        natural = natural_order(_runs(*sorted(alive, reverse=True)[:10]), running, first_page=True)
        held = table_order(order, natural, hold=True, exists=lambda i: i in alive)
        assert held[:len(order)] == order  # every row shown before is at the same position
        assert set(natural) <= set(held)  # and every run of the page is shown
        order = held
    assert table_order(order, natural, hold=False) == natural  # nothing selected: natural order


def test_held_order_drops_a_deleted_run_and_positions_the_selection_from_it():
    assert table_order([6, 9, 8, 7], [9, 8, 7], hold=True, exists=lambda i: i != 6) == [9, 8, 7]
    assert table_order(None, [9, 8], hold=True) == [9, 8]
    assert table_order([9, 9, 8], [8], hold=True) == [9, 8]


def test_a_selection_made_on_a_held_table_names_the_same_runs_after_a_refresh():
    # the browser's select-all on the rows it shows, the server's refresh in between: same runs
    from pcd.ui.selection import remap

    shown = table_order([5, 9, 8, 7], [5, 9, 8, 7], hold=False)
    rows = list(range(len(shown)))  # select-all as the browser sends it
    refreshed = table_order(shown, natural_order(_runs(11, 10, 9, 8, 7), _runs(10), True), hold=True)
    chosen, new_rows = remap(shown, rows, refreshed)
    assert chosen == [5, 9, 8, 7] and new_rows == rows  # no re-positioning, nothing to push to the browser
