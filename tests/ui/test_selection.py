"""Table selections follow the runs (ids), not the row positions."""
from pcd.ui.selection import remap


def test_selection_follows_ids_when_rows_move():
    # a new run (9) appears on top: the selected run 5 moves from row 1 to row 2
    assert remap([7, 5, 3], [1], [9, 7, 5, 3]) == ([5], [2])
    # a selected run is deleted elsewhere: it drops out, the other stays selected
    assert remap([7, 5, 3], [0, 2], [7, 5]) == ([7], [0])
    # unchanged table: unchanged selection; stale positions are ignored
    assert remap([7, 5], [0, 1], [7, 5]) == ([7, 5], [0, 1])
    assert remap([7, 5], [4, -1], [7, 5]) == ([], [])
    assert remap(None, [0], [7]) == ([], [])
