from __future__ import annotations

import numpy as np
import pytest
import torch

from netfl.learning import (
    MODELS,
    LearningContext,
    SerialExecutor,
    TrainConfig,
    TrainTask,
    evaluate,
    get_model_spec,
    load_dataset,
    num_parameters,
    train_local,
)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("shape", [(1, 28, 28), (1, 8, 8), (3, 32, 32)])
def test_models_map_images_to_logits(name, shape):
    model = get_model_spec(name).build(shape, 7)
    assert model(torch.zeros(5, *shape)).shape == (5, 7)


def test_parameter_counts_match_mcmahan():
    # McMahan et al. 2017, Sec. 3: 2NN 199,210 and CNN 1,663,370 parameters on MNIST.
    assert num_parameters(get_model_spec("2nn").build((1, 28, 28), 10)) == 199_210
    assert num_parameters(get_model_spec("cnn").build((1, 28, 28), 10)) == 1_663_370


def test_feddif_models_have_the_papers_shapes():
    # FedDif CNN: convs 3·64·9+64, 64·128·9+128, 128·256·9+256; FC 4096·256+256, 256·10+10
    cnn = get_model_spec("cifar_cnn").build((3, 32, 32), 10)
    assert num_parameters(cnn) == 1792 + 73_856 + 295_168 + 1_048_832 + 2570
    assert cnn[-3].in_features == 4096
    # LSTM: rows as the sequence (28 features), 2 layers, hidden 128
    lstm = get_model_spec("lstm").build((1, 28, 28), 10).lstm
    assert (lstm.input_size, lstm.hidden_size, lstm.num_layers) == (28, 128, 2)


def _digits():
    return load_dataset("digits", seed=0)


def test_local_sgd_learns_and_is_deterministic():
    ds = _digits()
    spec = get_model_spec("logreg")
    model = spec.build(ds.input_shape, 10)
    state0 = {k: v.clone() for k, v in model.state_dict().items()}
    acc0, _ = evaluate(model, state0, ds.test_x, ds.test_y, spec.loss_fn())
    cfg = TrainConfig(lr=0.1, momentum=0.9, batch_size=32, epochs=3)
    r1 = train_local(model, state0, ds.train_x, ds.train_y, cfg, seed=5, loss_fn=spec.loss_fn())
    r2 = train_local(model, state0, ds.train_x, ds.train_y, cfg, seed=5, loss_fn=spec.loss_fn())
    acc1, _ = evaluate(model, r1.state, ds.test_x, ds.test_y, spec.loss_fn())
    assert acc1 > 0.85 > acc0
    assert r1.num_steps == 3 * int(np.ceil(len(ds.train_y) / 32))
    assert all(torch.equal(r1.state[k], r2.state[k]) for k in r1.state)


def test_svm_trains_with_hinge_loss():
    ds = _digits()
    spec = get_model_spec("svm")
    assert isinstance(spec.loss_fn(), torch.nn.MultiMarginLoss)
    model = spec.build(ds.input_shape, 10)
    res = train_local(
        model,
        model.state_dict(),
        ds.train_x,
        ds.train_y,
        TrainConfig(lr=0.05, epochs=3),
        1,
        spec.loss_fn(),
    )
    acc, _ = evaluate(model, res.state, ds.test_x, ds.test_y, spec.loss_fn())
    assert acc > 0.85


def test_executor_runs_the_same_job_as_a_direct_call():
    ds = _digits()
    spec = get_model_spec("fcn")
    ctx = LearningContext(ds.train_x, ds.train_y, ds.input_shape, 10, {"fcn": spec})
    state = spec.build(ds.input_shape, 10).state_dict()
    idx = np.arange(0, 300, 2)
    cfg = TrainConfig(lr=0.05, batch_size=10)
    fut = SerialExecutor(ctx).submit(TrainTask("fcn", state, idx, cfg, seed=9))
    direct = train_local(
        spec.build(ds.input_shape, 10),
        state,
        ds.train_x[idx],
        ds.train_y[idx],
        cfg,
        9,
        spec.loss_fn(),
    )
    got = fut.result()
    assert got.num_samples == 150
    assert all(torch.equal(got.state[k], direct.state[k]) for k in got.state)


def test_batch_bounds_cover_every_sample_once_and_never_leave_one_alone():
    from netfl.learning.train import batch_bounds

    for n in range(1, 60):
        for b in (1, 2, 5, 10, 16):
            bounds = batch_bounds(n, b)
            covered = [i for s, e in bounds for i in range(s, e)]
            assert covered == list(range(n))
            if n > 1 and b > 1:
                assert all(e - s >= 2 for s, e in bounds)
            assert all(e - s <= b + 1 for s, e in bounds)
