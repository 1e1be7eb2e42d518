"""Evaluation during training: Mill inside a training loop.

* :class:`mill.integrations.hf.MillCallback`: a ``transformers`` ``TrainerCallback``;
* :class:`mill.integrations.lightning.MillCallback`: a Lightning ``Callback``
  (``pip install mill-eval[lightning]``);
* :func:`mill.integrations.accelerate.evaluate_during_training`: for hand-written loops.

The three share :class:`mill.integrations.core.TrainingEvaluator` and its settings
(``tasks``, ``every_n_steps``, ``at_epoch_end``, ``at_train_end``, ``limit``, ``overrides``,
``metrics``, ``cache``). Importing this package imports neither torch nor a trainer.
"""
