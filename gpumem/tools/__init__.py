"""The tools layer: what lessons use to measure and show, above the runtime.

* :mod:`.sweep` -- the machinery of every lesson's sweeps (argument checks,
  timing and counters per point into a :class:`gpumem.Table`);
* :mod:`.introspect` -- kernel attributes, occupancy, the compiler's report;
* :mod:`.roofline` -- launches under the FP32 peak and the bandwidth roof;
* :mod:`.headline` -- ``gpumem report`` rows;
* :mod:`.lesson` -- :class:`Lesson`, what a lesson declares.

Imports the runtime, ``_core`` and the model; never a lesson or the face.
"""
