"""The router of a mixture of experts (specs.MoeSpec router*): read from each family's config.json as its
Transformers class (v4.57.1) or DeepSeek's MoEGate defines it, checked as Megatron-core checks it, and
written into the Megatron-LM launch, so a launched DeepSeek-V3 routes as DeepSeek-V3 does rather than with
Megatron's softmax default. The cost model prices every router alike (one h x experts GEMM and a top-k).
"""
import json

import pytest
import yaml
from emit_support import job

from planner.commands.main import main
from planner.emit import megatron
from planner.errors import PlannerError
from planner.inputs.loading import load_model_spec
from planner.inputs.specs import MoeSpec

HF = "tests/data/hf_configs"
DEFAULT = {"router": "topk_softmax", "router_expert_bias": False, "router_groups": 0, "router_group_topk": 0,
           "router_scaling_factor": 1.0, "router_probs_on_input": False}


def router(spec) -> dict:
    return {k: v for k, v in spec.moe.model_dump().items() if k.startswith("router")}


@pytest.mark.parametrize("config, expected", [
    ("mixtral-8x7b", {}),  # renormalised top-k of a full softmax: the softmax of the top-k logits
    ("gpt-oss-20b", {}),
    ("qwen3-30b-a3b", {}),  # "norm_topk_prob": true
    ("qwen1.5-moe-a2.7b", {"router": "softmax_topk"}),  # "norm_topk_prob": false
    ("deepseek-v2-lite", {"router": "softmax_topk"}),  # topk_method greedy, norm_topk_prob false (class default)
    # scoring_func sigmoid, topk_method noaux_tc, n_group 8, topk_group 4, routed_scaling_factor 2.5
    ("deepseek-v3", {"router": "sigmoid", "router_expert_bias": True, "router_groups": 8, "router_group_topk": 4,
                     "router_scaling_factor": 2.5}),
    # Kimi K2: one group (no limit), routed_scaling_factor 2.827
    ("kimi-k2", {"router": "sigmoid", "router_expert_bias": True, "router_scaling_factor": 2.827}),
    # Llama4TextMoe: the sigmoid weight scales the routed expert's input (Megatron moe_apply_probs_on_input)
    ("llama4-scout-17b-16e", {"router": "sigmoid", "router_probs_on_input": True}),
])
def test_configs_import_their_router(config, expected):
    assert router(load_model_spec(f"{HF}/{config}.json")) == {**DEFAULT, **expected}


def write(tmp_path, data) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_class_defaults_apply_when_the_keys_are_absent(tmp_path):
    qwen = json.load(open(f"{HF}/qwen3-30b-a3b.json"))
    qwen.pop("norm_topk_prob")  # Qwen3MoeConfig default False
    assert router(load_model_spec(write(tmp_path, qwen)))["router"] == "softmax_topk"
    v3 = json.load(open(f"{HF}/deepseek-v3.json"))
    for key in ("scoring_func", "topk_method", "n_group", "topk_group", "norm_topk_prob", "routed_scaling_factor"):
        v3.pop(key)
    assert router(load_model_spec(write(tmp_path, v3))) == router(load_model_spec(f"{HF}/deepseek-v3.json"))


@pytest.mark.parametrize("key, value", [
    ("scoring_func", "relu"), ("topk_method", "sinkhorn"), ("norm_topk_prob", False), ("norm_topk_prob", "yes"),
    ("routed_scaling_factor", -1), ("routed_scaling_factor", True), ("n_group", None),
])
def test_routers_planner_cannot_state_are_refused_naming_the_key(tmp_path, key, value):
    v3 = json.load(open(f"{HF}/deepseek-v3.json"))
    v3[key] = value
    with pytest.raises(PlannerError, match=key) as err:
        load_model_spec(write(tmp_path, v3))
    assert "\n" not in str(err.value)


BASE = {"num_experts": 64, "experts_per_token": 8, "ffn_hidden_size": 512}


@pytest.mark.parametrize("fields, words", [
    ({"experts_per_token": 1}, "no gradient"),  # Megatron-core: "Please use --moe-router-pre-softmax when topk is 1"
    ({"router_expert_bias": True}, "needs router: sigmoid"),  # transformer_config.py: sigmoid or sqrtsoftplus only
    ({"router_groups": 8}, "go together"),
    ({"router_groups": 6, "router_group_topk": 2}, "divisible"),
    ({"router_groups": 8, "router_group_topk": 9}, "exceeds router_groups"),
    ({"router_groups": 16, "router_group_topk": 1}, "exceeds the experts"),  # 8 > 1 group of 4
])
def test_spec_refuses_routers_megatron_refuses(fields, words):
    with pytest.raises(ValueError, match=words):
        MoeSpec(**{**BASE, **fields})


def test_top1_routers_that_train(tmp_path):
    assert MoeSpec(**{**BASE, "experts_per_token": 1, "router": "softmax_topk"})
    assert MoeSpec(**{**BASE, "experts_per_token": 1, "router": "sigmoid"})


def test_a_top1_model_without_a_router_is_one_line_exit_2(tmp_path, capsys):
    model = {"name": "switch", "num_layers": 4, "hidden_size": 512, "num_attention_heads": 8, "vocab_size": 32000,
             "seq_length": 1024, "moe": {"num_experts": 8, "experts_per_token": 1, "ffn_hidden_size": 2048}}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(model))
    code = main(["estimate", str(tmp_path / "m.yaml"), "dgx-h100", "--gpus", "8", "--tp", "1", "--pp", "1",
                 "--mbs", "1", "--gbs", "8"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "softmax_topk" in err[0]


def flags_after(args, flag):
    return args[args.index(flag) + 1] if flag in args else None


def test_megatron_launch_routes_as_the_model_does():
    plan = dict(tp=1, pp=1, dp=64, ep=64, micro_batch_size=1, global_batch_size=1024)
    v3 = megatron.flat_args(job(load_model_spec("deepseek-v3"), **plan))
    assert flags_after(v3, "--moe-router-score-function") == "sigmoid"
    assert "--moe-router-enable-expert-bias" in v3 and "--moe-router-pre-softmax" not in v3
    assert flags_after(v3, "--moe-router-num-groups") == "8" and flags_after(v3, "--moe-router-group-topk") == "4"
    assert flags_after(v3, "--moe-router-topk-scaling-factor") == "2.5"
    small = dict(tp=1, pp=1, dp=8, ep=4, micro_batch_size=1, global_batch_size=64)
    qwen15 = megatron.flat_args(job(load_model_spec(f"{HF}/qwen1.5-moe-a2.7b.json", 4096), **small))
    assert "--moe-router-pre-softmax" in qwen15 and "--moe-router-score-function" not in qwen15
    mixtral = megatron.flat_args(job(load_model_spec("mixtral-8x7b"), **dict(small, ep=8)))
    assert not [a for a in mixtral if a.startswith("--moe-router-") and a not in ("--moe-router-topk",
                                                                                  "--moe-router-load-balancing-type")]


def test_the_launch_states_the_models_load_balancing_loss():
    """Megatron-LM's --moe-aux-loss-coeff defaults to 0 (arguments.py @d98e8a64): a launch that does not state
    the model's loss trains with none. Mixtral 8x7B's config.json router_aux_loss_coef 0.02 is GShard's loss over
    a micro-batch's tokens (aux_loss); DeepSeek-V3's aux_loss_alpha 0.001 with seq_aux is per sequence
    (seq_aux_loss, beside its expert bias). A model that states none gets none, and the README says so."""
    from emit_support import tiny
    from planner.emit import render

    small = dict(tp=1, pp=1, dp=8, ep=8, micro_batch_size=1, global_batch_size=64)
    mixtral = megatron.flat_args(job(load_model_spec("mixtral-8x7b"), **small))
    assert flags_after(mixtral, "--moe-router-load-balancing-type") == "aux_loss"
    assert flags_after(mixtral, "--moe-aux-loss-coeff") == "0.02"
    v3 = megatron.flat_args(job(load_model_spec("deepseek-v3"), **dict(small, dp=64, ep=64, global_batch_size=1024)))
    assert flags_after(v3, "--moe-router-load-balancing-type") == "seq_aux_loss"
    assert flags_after(v3, "--moe-aux-loss-coeff") == "0.001"
    bare = tiny(moe={"num_experts": 8, "experts_per_token": 2, "ffn_hidden_size": 1024})
    built = job(bare, **small)
    assert "--moe-aux-loss-coeff" not in megatron.flat_args(built)
    readme = " ".join(render(built, "megatron")["README.txt"][0].split())
    assert "the model states no load-balancing loss" in readme
    assert "load-balancing loss" not in " ".join(render(job(load_model_spec("mixtral-8x7b"), **small),
                                                        "megatron")["README.txt"][0].split())


def test_hugging_face_configs_give_their_balancing_loss(tmp_path):
    """config.json's router_aux_loss_coef (Transformers' load_balancing_loss_func) and DeepSeek's aux_loss_alpha
    with seq_aux (modeling_deepseek.py MoEGate); a key left out stays out, and a string is refused by name."""
    from emit_support import ROOT

    assert load_model_spec(f"{HF}/gpt-oss-20b.json").moe.aux_loss_coeff == 0.9
    v3 = load_model_spec(f"{HF}/deepseek-v3.json").moe
    assert (v3.aux_loss_coeff, v3.aux_loss_scope) == (0.001, "sequence")
    assert load_model_spec(f"{HF}/qwen1.5-moe-a2.7b.json", 4096).moe.aux_loss_coeff == 0.001
    cfg = json.loads((ROOT / HF / "mixtral-8x7b.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in cfg.items() if k != "router_aux_loss_coef"}))
    assert load_model_spec(str(tmp_path / "config.json")).moe.aux_loss_coeff is None  # absent stays absent
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "router_aux_loss_coef": "0.02"}))
    with pytest.raises(PlannerError, match="router_aux_loss_coef: must be a number"):
        load_model_spec(str(tmp_path / "config.json"))


def test_gpt_oss_launches_its_own_mlp_and_sinks():
    """Megatron-Bridge's GPTOSSProvider: quick_gelu GLU, glu_linear_offset 1.0, activation_func_clamp_value
    7.0, softmax_type learnable (GptOssExperts' swiglu_limit 7, alpha 1.702; GptOssAttention's sinks)."""
    args = megatron.flat_args(job(load_model_spec("gpt-oss-120b"), tp=1, pp=1, dp=8, ep=8, micro_batch_size=1,
                                  global_batch_size=64, rope_fusion=False))
    assert "--quick-geglu" in args and "--swiglu" not in args
    assert flags_after(args, "--glu-linear-offset") == "1.0" and flags_after(args, "--activation-func-clamp-value") == "7.0"
    assert flags_after(args, "--softmax-type") == "learnable"


def test_glu_settings_need_a_gated_mlp():
    from emit_support import tiny
    with pytest.raises(ValueError, match="need a gated mlp"):
        tiny(mlp="gelu", glu_clamp=7.0)
