"""The live training view's words and pictures: :mod:`.view` (its readouts as view objects, made
from the run's numbers: progress, loss, step times, memory), :mod:`.svg` (the same charts as
static SVG) and :mod:`.format` (the run's numbers in short texts). ``LiveWidget`` syncs the
views' JSON and live.js draws it, so the live and the saved picture agree."""
