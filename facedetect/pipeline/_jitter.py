"""How far the jitter turns, scales and shifts a training face: plain numbers, read by the
run's settings (:mod:`._config`, without OpenCV) and by the augmentation (:mod:`._augment`)."""

MAX_ANGLE = 8.0    # degrees either way
MAX_SCALE = 0.06   # relative, either way
# The largest shift, in window pixels either way along each axis. OpenCV's scan scores
# every second window up to twice the trained size, so a face can sit a pixel off every
# window it is scored in: the recipe for OpenCV's format (faces from the wild, no channel
# features) moves its faces up to 1.5 px. With channel features (our scanner only, step 1
# near faces) it found no more held-out crops at equal false alarms and fewer grainy ones,
# so that recipe, and CBCL's, keep 0.75 (docs/detector-training.md).
WILD_JITTER_SHIFT = 1.5
CBCL_JITTER_SHIFT = 0.75
