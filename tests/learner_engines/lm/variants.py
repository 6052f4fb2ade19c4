"""The LM starter's engines beside solved/: each is solved/ with a few lines replaced.

BUGS: name -> (file, [(old, new), ...], the row that must fail, words its diagnosis must
contain). WRITTEN_DIFFERENTLY: correct engines that must pass. Each old text occurs exactly
once in its file (the test asserts it), so a variant cannot drift silently from solved/.
"""

ATTENTION_SCALE = "        att = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hs))\n"
MASK_THEN_SOFTMAX = (
    "        att = masked_fill(att, np.triu(np.ones((t, t), dtype=bool), 1), -np.inf)\n"
    "        att = dropout(softmax(att, dim=-1), self.dropout, self.training)\n"
)
SOFTMAX_RULE = "        x.grad += s * (out.grad - (out.grad * s).sum(axis=dim, keepdims=True))\n"
COMPOSED_LAYER_NORM = """\
    xc = x - x.mean(axis=-1, keepdims=True)
    var = (xc * xc).mean(axis=-1, keepdims=True)
    out = xc / sqrt(var + eps) * weight
    return out if bias is None else out + bias
"""
FUSED_LAYER_NORM = """\
    mean = x.data.mean(axis=-1, keepdims=True)
    std = np.sqrt(x.data.var(axis=-1, keepdims=True) + eps)
    xhat = (x.data - mean) / std
    if bias is None:
        out = Tensor(xhat * weight.data, (x, weight), "layer_norm")
    else:
        out = Tensor(xhat * weight.data + bias.data, (x, weight, bias), "layer_norm")

    def _backward():
        g = out.grad * weight.data
        x.grad += (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True)) / std
        weight.grad += unbroadcast(out.grad * xhat, weight.shape)
        if bias is not None:
            bias.grad += unbroadcast(out.grad, bias.shape)

    out._backward = _backward
    return out
"""
FUSED_RULE = [
    ("from engine import Tensor\n", "from engine import Tensor, unbroadcast\n"),
    (COMPOSED_LAYER_NORM, FUSED_LAYER_NORM),
]
ADAMW_BIAS_CORRECTION = (
    "                m_hat = m / (1 - b1**self.t)\n                v_hat = v / (1 - b2**self.t)\n"
)
GROUPS = """\
        {"params": [p for p in params if p.data.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.data.ndim < 2], "weight_decay": 0.0},
"""
HEADS = """\
        q = q.reshape(b, t, nh, hs).transpose(0, 2, 1, 3)  # (B, nh, T, hs)
        k = k.reshape(b, t, nh, hs).transpose(0, 2, 1, 3)
        v = v.reshape(b, t, nh, hs).transpose(0, 2, 1, 3)
"""
MERGE = "        y = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, c)\n"
DROPOUT_MASK = "    keep = (np.random.random(x.data.shape) >= p) / (1.0 - p)\n"
EMBEDDING_RULE = "        np.add.at(weight.grad, idx, out.grad)\n"

BUGS = {
    "embedding_assigns": (
        "lm_ops.py",
        [(EMBEDDING_RULE, "        weight.grad[idx] = out.grad\n")],
        "embedding",
        "np.add.at(weight.grad, idx, out.grad)",
    ),
    "embedding_fancy_add": (
        "lm_ops.py",
        [(EMBEDDING_RULE, "        weight.grad[idx] += out.grad\n")],
        "embedding",
        "np.add.at(weight.grad, idx, out.grad)",
    ),
    "softmax_no_sum": (
        "lm_ops.py",
        [(SOFTMAX_RULE, "        x.grad += s * out.grad\n")],
        "softmax",
        "misses the sum term",
    ),
    "softmax_sum_last_axis": (
        "lm_ops.py",
        [(SOFTMAX_RULE, SOFTMAX_RULE.replace("axis=dim", "axis=-1"))],
        "softmax",
        "sums over the last axis, not over dim",
    ),
    "softmax_unstable": (
        "lm_ops.py",
        [
            (
                "    e = np.exp(x.data - x.data.max(axis=dim, keepdims=True))\n",
                "    e = np.exp(x.data)\n",
            )
        ],
        "softmax of large numbers",
        "subtract the max along dim",
    ),
    "split_along_the_last_dim_only": (
        "lm_ops.py",
        [
            (
                "    for start in range(0, x.data.shape[dim], size):\n"
                "        where = (slice(None),) * dim + (slice(start, start + size),)\n",
                "    for start in range(0, x.data.shape[-1], size):\n"
                "        where = (Ellipsis, slice(start, start + size))\n",
            )
        ],
        "split along dim 0",
        "could not be broadcast",
    ),
    "cat_backward_along_the_last_dim": (
        "lm_ops.py",
        [
            (
                "        ends = np.cumsum([t.data.shape[dim] for t in tensors])[:-1]\n"
                "        for t, g in zip(tensors, np.split(out.grad, ends, axis=dim)):\n",
                "        ends = np.cumsum([t.data.shape[-1] for t in tensors])[:-1]\n"
                "        for t, g in zip(tensors, np.split(out.grad, ends, axis=-1)):\n",
            )
        ],
        "cat along dim 0",
        "could not be broadcast",
    ),
    "softmax_dim_0_taken_as_none": (
        "lm_ops.py",
        [
            (
                "    e = np.exp(x.data - x.data.max(axis=dim, keepdims=True))\n",
                "    dim = dim or -1\n"
                "    e = np.exp(x.data - x.data.max(axis=dim, keepdims=True))\n",
            )
        ],
        "softmax along dim 0",
        "the forward differs from torch's",
    ),
    "dropout_mask_per_column": (
        "lm_ops.py",
        [(DROPOUT_MASK, DROPOUT_MASK.replace("x.data.shape)", "x.data.shape[-1])"))],
        "dropout in training",
        "zeroed a whole column or row",
    ),
    "dropout_mask_of_the_last_two_dims": (
        "lm_ops.py",
        [(DROPOUT_MASK, DROPOUT_MASK.replace("x.data.shape)", "x.data.shape[-2:])"))],
        "dropout in training",
        "dropped the same elements in every (20, 25) matrix",
    ),
    "dropout_skips_4d": (
        "lm_ops.py",
        [
            (
                "    if not training or p == 0.0:\n",
                "    if not training or p == 0.0 or x.data.ndim == 4:\n",
            )
        ],
        "dropout in training",
        "dropped nothing",
    ),
    "dropout_mask_fixed": (
        "lm_ops.py",
        [
            (
                DROPOUT_MASK,
                DROPOUT_MASK.replace("np.random.random(", "np.random.default_rng(0).random("),
            )
        ],
        "dropout in training",
        "each call needs a new mask",
    ),
    "softmax_in_float32": (
        "lm_ops.py",
        [
            (
                "    e = np.exp(x.data - x.data.max(axis=dim, keepdims=True))\n",
                "    x32 = x.data.astype(np.float32)\n"
                "    e = np.exp(x32 - x32.max(axis=dim, keepdims=True))\n",
            )
        ],
        "softmax",
        "agree with torch's float64 to 1e-6 but not to 1e-10",
    ),
    "softmax_shifts_its_input": (
        "lm_ops.py",
        [
            (
                "    e = np.exp(x.data - x.data.max(axis=dim, keepdims=True))\n",
                "    x.data -= x.data.max(axis=dim, keepdims=True)\n    e = np.exp(x.data)\n",
            )
        ],
        "softmax",
        "x.data changed: an op must leave its inputs as they were",
    ),
    "masked_fill_passes_gradient": (
        "lm_ops.py",
        [("        x.grad += np.where(mask, 0.0, out.grad)\n", "        x.grad += out.grad\n")],
        "masked_fill",
        "lets the gradient through where mask is True",
    ),
    "layer_norm_no_mean_terms": (
        "lm_ops.py",
        [
            *FUSED_RULE,
            (
                "        x.grad += (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, "
                "keepdims=True)) / std\n",
                "        x.grad += g / std\n",
            ),
        ],
        "layer_norm",
        "misses the mean terms",
    ),
    "variance_summed": (
        "lm_ops.py",
        [
            (
                "    var = (xc * xc).mean(axis=-1, keepdims=True)\n",
                "    var = (xc * xc).sum(axis=-1, keepdims=True)\n",
            )
        ],
        "layer_norm",
        "sums the squares",
    ),
    "variance_unbiased": (
        "lm_ops.py",
        [
            (
                "    var = (xc * xc).mean(axis=-1, keepdims=True)\n",
                "    var = (xc * xc).sum(axis=-1, keepdims=True) / (x.shape[-1] - 1)\n",
            )
        ],
        "layer_norm",
        "N - 1",
    ),
    "gelu_no_x_term": (
        "lm_ops.py",
        [
            (
                "        x.grad += out.grad * (phi + x.data * density)\n",
                "        x.grad += out.grad * phi\n",
            )
        ],
        "gelu",
        "misses x * phi(x)",
    ),
    "cat_overwrites": (
        "lm_ops.py",
        [("            t.grad += g\n", "            t.grad = g\n")],
        "cat",
        "cat's backward",
    ),
    "dropout_in_eval": (
        "lm_ops.py",
        [("    if not training or p == 0.0:\n", "    if p == 0.0:\n")],
        "dropout in eval",
        "in eval mode it must return x unchanged",
    ),
    "mask_after_softmax": (
        "models.py",
        [
            (
                MASK_THEN_SOFTMAX,
                "        att = softmax(att, dim=-1)\n"
                "        att = masked_fill(att, np.triu(np.ones((t, t), dtype=bool), 1), 0.0)\n",
            )
        ],
        "CausalSelfAttention",
        "the mask is applied after softmax",
    ),
    "attention_unscaled": (
        "models.py",
        [(ATTENTION_SCALE, "        att = q @ k.transpose(0, 1, 3, 2)\n")],
        "CausalSelfAttention",
        "not scaled",
    ),
    "heads_split_by_reshape": (
        "models.py",
        [
            (
                HEADS,
                "        q = q.reshape(b, nh, t, hs)\n"
                "        k = k.reshape(b, nh, t, hs)\n"
                "        v = v.reshape(b, nh, t, hs)\n",
            )
        ],
        "CausalSelfAttention",
        "split by reshape alone",
    ),
    "heads_merged_by_reshape": (
        "models.py",
        [(MERGE, "        y = (att @ v).reshape(b, t, c)\n")],
        "CausalSelfAttention",
        "merged by reshape alone",
    ),
    "heads_hard_coded": (
        "models.py",
        [("        nh, hs = self.n_head, c // self.n_head\n", "        nh, hs = 2, c // 2\n")],
        "CausalSelfAttention",
        "n_head heads of n_embd // n_head each",
    ),
    "gpt_returns_its_features": (
        "models.py",
        [
            (
                '        logits = self.lm_head(tr["ln_f"](x))\n'
                "        return logits, None if targets is None else _loss(logits, targets)\n",
                '        x = tr["ln_f"](x)\n'
                "        return x, None if targets is None else _loss(self.lm_head(x), targets)\n",
            )
        ],
        "GPT",
        "GPT(idx) without targets returns an array of shape (4, 11, 24)",
    ),
    "mlp_block_size_written_in": (
        "models.py",
        [
            (
                '            "0": Linear(c.block_size * c.n_embd, c.n_embd2),\n',
                '            "0": Linear(3 * c.n_embd, c.n_embd2),\n',
            ),
            ("        for _ in range(self.config.block_size):\n", "        for _ in range(3):\n"),
        ],
        "makemore's MLP",
        "mlp.0.weight has shape (20, 18), torch's (20, 30)",
    ),
    "mlp_needs_block_size_tokens": (
        "models.py",
        [
            (
                "        for _ in range(self.config.block_size):\n"
                "            embs.append(self.wte(idx))\n"
                "            idx = np.roll(idx, 1, axis=1)\n"
                "            idx[:, 0] = self.config.vocab_size\n",
                "        b, t = idx.shape\n"
                "        for k in range(self.config.block_size):\n"
                "            pad = np.full((b, k), self.config.vocab_size)\n"
                "            embs.append(self.wte(np.concatenate([pad, idx[:, : t - k]], 1)))\n",
            )
        ],
        "makemore's MLP",
        "all the input array dimensions except for the concatenation axis must match",
    ),
    "train_reaches_the_top_only": (
        "models.py",
        [
            (
                "    def train(self, mode=True):\n"
                "        for module in _modules(self):\n"
                "            module.training = mode\n"
                "        return self\n\n"
                "    def eval(self):\n"
                "        return self.train(False)\n",
                "    def train(self, mode=True):\n"
                "        self.training = mode\n"
                "        return self\n\n"
                "    def eval(self):\n"
                "        for module in _modules(self):\n"
                "            module.training = False\n"
                "        return self\n",
            )
        ],
        "GPT with dropout in training",
        "dropout ran 1 of the 10 times nanoGPT's GPT runs it in training: a dropout left out, "
        "or a module in eval mode (model.train() must reach every module",
    ),
    "head_not_tied": (
        "models.py",
        [('        self.lm_head.weight = self.transformer["wte"].weight\n', "")],
        "GPT",
        "lm_head.weight is a parameter of its own",
    ),
    "no_position_embedding": (
        "models.py",
        [
            (
                '        x = tr["wte"](idx) + tr["wpe"](np.arange(idx.shape[1]))\n',
                '        x = tr["wte"](idx)\n',
            )
        ],
        "GPT",
        "forward in models.py is not nanoGPT's",
    ),
    "position_embedding_detached": (
        "models.py",
        [
            (
                '        x = tr["wte"](idx) + tr["wpe"](np.arange(idx.shape[1]))\n',
                '        x = tr["wte"](idx) + Tensor(tr["wpe"].weight.data[: idx.shape[1]])\n',
            )
        ],
        "GPT",
        "the loss is right; transformer.wpe.weight wrong (1 wrong; transformer.wte and "
        "transformer.h.0.ln_1 right): look at its path to the loss",
    ),
    "position_table_whole": (
        "models.py",
        [
            (
                '        x = tr["wte"](idx) + tr["wpe"](np.arange(idx.shape[1]))\n',
                '        x = tr["wte"](idx) + tr["wpe"].weight\n',
            )
        ],
        "GPT",
        "could not be broadcast together with shapes (4,11,24) (12,24)",
    ),
    "position_rows_from_end": (
        "models.py",
        [
            (
                '        x = tr["wte"](idx) + tr["wpe"](np.arange(idx.shape[1]))\n',
                '        x = tr["wte"](idx) + tr["wpe"](np.arange(12)[-idx.shape[1] :])\n',
            )
        ],
        "GPT",
        "forward in models.py is not nanoGPT's",
    ),
    "adamw_ignores_betas": (
        "models.py",
        [
            (
                "    return AdamW(groups, learning_rate, betas)\n",
                "    return AdamW(groups, learning_rate)\n",
            )
        ],
        "GPT trains on Shakespeare",
        "look at what AdamW keeps between steps",
    ),
    "embedding_dropout_missing": (
        "models.py",
        [("        x = dropout(x, self.config.dropout, self.training)\n", "")],
        "GPT with dropout in training",
        "nanoGPT's call 1 has shape (4, 11, 24) (after the embeddings",
    ),
    "dropout_before_softmax": (
        "models.py",
        [
            (
                MASK_THEN_SOFTMAX,
                "        att = dropout(att, self.dropout, self.training)\n"
                "        att = masked_fill(att, np.triu(np.ones((t, t), dtype=bool), 1), -np.inf)\n"
                "        att = softmax(att, dim=-1)\n",
            )
        ],
        "GPT with dropout in training",
        "on att after softmax",
    ),
    "dropout_arguments_swapped": (
        "models.py",
        [
            (
                "        x = dropout(x, self.config.dropout, self.training)\n",
                "        x = dropout(x, self.training, self.config.dropout)\n",
            )
        ],
        "GPT with dropout in training",
        "dropout call 1 got p=True, training=0.5",
    ),
    "attention_dropout_rate_wrong": (
        "models.py",
        [
            (
                MASK_THEN_SOFTMAX,
                MASK_THEN_SOFTMAX.replace("self.dropout, self", "self.dropout / 2, self"),
            )
        ],
        "GPT with dropout in training",
        "dropout call 2 got p=0.25; the model's dropout is 0.5",
    ),
    "dropout_ignores_eval": (
        "models.py",
        [
            (
                "        att = dropout(softmax(att, dim=-1), self.dropout, self.training)\n",
                "        att = dropout(softmax(att, dim=-1), self.dropout, True)\n",
            )
        ],
        "GPT in eval mode",
        "dropout must do nothing in eval mode",
    ),
    "weight_decay_everywhere": (
        "models.py",
        [(GROUPS, '        {"params": params, "weight_decay": weight_decay},\n')],
        "MLP trains on names",
        "weight decay reaches the biases",
    ),
    "adamw_no_bias_correction": (
        "models.py",
        [(ADAMW_BIAS_CORRECTION, "                m_hat, v_hat = m, v\n")],
        "MLP trains on names",
        "look at AdamW.step",
    ),
    "mlp_overwrites_idx": (
        "models.py",
        [
            ("        idx = np.array(idx)\n", "        idx = np.asarray(idx)\n"),
            (
                "            idx = np.roll(idx, 1, axis=1)\n",
                "            idx[:, 1:] = idx[:, :-1].copy()\n",
            ),
        ],
        "makemore's MLP",
        "the model changed the idx array it was given",
    ),
    "module_zero_grad_misses_submodules": (
        "models.py",
        [
            (
                "    def zero_grad(self):\n        for p in self.parameters():\n",
                "    def zero_grad(self):\n"
                "        for p in [v for v in vars(self).values() if isinstance(v, Tensor)]:\n",
            )
        ],
        "MLP trains on names",
        "model.zero_grad() on alternate steps",
    ),
    "adamw_ignores_the_groups_lr": (
        "models.py",
        [
            (
                "        self.betas, self.eps = betas, eps\n",
                "        self.lr, self.betas, self.eps = lr, betas, eps\n",
            ),
            ('                lr = group["lr"]\n', "                lr = self.lr\n"),
        ],
        "GPT trains on Shakespeare",
        "not each group's group['lr']",
    ),
    "gpt_init_without_residual_scaling": (
        "models.py",
        [
            (
                "                std = 0.02 / math.sqrt(2 * c.n_layer)"
                ' if name.endswith("c_proj.weight") else 0.02\n',
                "                std = 0.02\n",
            )
        ],
        "GPT",
        "c_proj.weight has mean 0.000407, std 0.02 and kurtosis",
    ),
    "linear_init_normal": (
        "models.py",
        [
            (
                "        self.weight = Tensor(np.random.uniform(-bound, bound, (nout, nin)))\n",
                "        self.weight = Tensor(np.random.randn(nout, nin) * bound)\n",
            )
        ],
        "makemore's MLP",
        "mlp.0.weight has mean",
    ),
    "attention_keeps_its_biases": (
        "models.py",
        [
            (
                "        self.c_attn = Linear(config.n_embd, 3 * config.n_embd,"
                " bias=config.bias)\n",
                "        self.c_attn = Linear(config.n_embd, 3 * config.n_embd)\n",
            )
        ],
        "GPT",
        "with bias=False (nanoGPT's train.py default), named_parameters() differs from torch's: "
        "not in torch's model: transformer.h.0.attn.c_attn.bias",
    ),
    "layer_norm_needs_a_bias": (
        "lm_ops.py",
        [("    return out if bias is None else out + bias\n", "    return out + bias\n")],
        "GPT",
        "Linear and layer_norm must work without a bias",
    ),
    "configure_optimizers_ignores_its_lr": (
        "models.py",
        [
            (
                "    return AdamW(groups, learning_rate, betas)\n",
                "    return AdamW(groups, 3e-4, betas)\n",
            )
        ],
        "MLP trains on names",
        "configure_optimizers made a group with lr 0.0003, not the learning_rate it was given",
    ),
    "residual_init_over_n_layer": (
        "models.py",
        [("0.02 / math.sqrt(2 * c.n_layer) if", "0.02 / c.n_layer if")],
        "GPT",
        "c_proj.weight has mean 0.000102, std 0.00501 and kurtosis",
    ),
    "mlp_bias_init_too_small": (
        "models.py",
        [
            (
                "np.random.uniform(-bound, bound, nout)",
                "np.random.uniform(-1.0 / nin, 1.0 / nin, nout)",
            )
        ],
        "makemore's MLP",
        "mlp.0.bias has mean",
    ),
    "gpt_layers_from_the_defaults": (
        "models.py",
        [
            (
                '            "h": [Block(c) for _ in range(c.n_layer)],\n',
                '            "h": [Block(c) for _ in range(GPTConfig.n_layer)],\n',
            )
        ],
        "GPT",
        "not in torch's model: transformer.h.3.ln_1.weight",
    ),
    "modules_start_in_eval_mode": (
        "models.py",
        [("    training = True\n", "    training = False\n")],
        "GPT with dropout in training",
        "or a module in eval mode (a new model starts in training mode, as torch's)",
    ),
    "adamw_reads_the_lr_once": (
        "models.py",
        [('lr = group["lr"]\n', 'lr = group.setdefault("_lr", group["lr"])\n')],
        "GPT trains on Shakespeare",
        "torch's losses with the first step's lr kept throughout",
    ),
    "weight_decay_after_the_update": (
        "models.py",
        [
            ('                p.data *= 1.0 - lr * group["weight_decay"]\n', ""),
            (
                "                p.data -= lr * m_hat / (np.sqrt(v_hat) + self.eps)\n",
                "                p.data -= lr * m_hat / (np.sqrt(v_hat) + self.eps)\n"
                '                p.data *= 1.0 - lr * group["weight_decay"]\n',
            ),
        ],
        "MLP trains on names",
        "weight decay comes after the Adam update",
    ),
    "adamw_steps_with_torch": (  # a lazy import: seen once it has run
        "models.py",
        [
            (
                "    def step(self):\n",
                "    def step(self):\n        __import__('torch')\n",
            )
        ],
        "own work",
        "your code imported torch (in its process here): the engine must be your own",
    ),
    "torch_hidden_under_another_name": (
        "models.py",
        [
            (
                "    def step(self):\n",
                "    def step(self):\n"
                "        import sys\n\n"
                "        if '_t' not in sys.modules:  # torch, kept out of sight\n"
                "            __import__('torch')\n"
                "            sys.modules['_t'] = sys.modules.pop('torch')\n",
            )
        ],
        "own work",
        "your code imported torch (in its process here): the engine must be your own",
    ),
    "mask_kept_from_the_first_call": (
        "models.py",
        [
            (
                "        att = masked_fill(att, np.triu(np.ones((t, t), dtype=bool), 1),",
                "        if not hasattr(self, 'mask'):\n"
                "            self.mask = np.triu(np.ones((t, t), dtype=bool), 1)\n"
                "        att = masked_fill(att, self.mask,",
            )
        ],
        "GPT",
        "GPT(...)(idx[:1, :2]) raised ValueError: operands could not be broadcast together with "
        "remapped shapes [original->remapped]: (11,11)  and requested shape (1,8,2,2)",
    ),
    "adamw_in_the_papers_efficient_form": (
        "models.py",
        [
            (ADAMW_BIAS_CORRECTION, ""),
            (
                "                p.data -= lr * m_hat / (np.sqrt(v_hat) + self.eps)\n",
                "                step = lr * math.sqrt(1 - b2**self.t) / (1 - b1**self.t)\n"
                "                p.data -= step * m / (np.sqrt(v) + self.eps)\n",
            ),
        ],
        "MLP trains on names",
        "by less than moves a loss",
    ),
    "adamw_moments_in_float32": (
        "models.py",
        [
            (
                "        self.m = {id(p): np.zeros_like(p.data) for p in params}\n"
                "        self.v = {id(p): np.zeros_like(p.data) for p in params}\n",
                "        self.m = {id(p): np.zeros_like(p.data, np.float32) for p in params}\n"
                "        self.v = {id(p): np.zeros_like(p.data, np.float32) for p in params}\n",
            )
        ],
        "MLP trains on names",
        "by less than moves a loss",
    ),
    "init_reseeded_for_each_parameter": (
        "models.py",
        [
            (
                "                p.data[...] = np.random.normal(0.0, std, p.data.shape)\n",
                "                rng = np.random.default_rng(1337)\n"
                "                p.data[...] = rng.normal(0.0, std, p.data.shape)\n",
            )
        ],
        "GPT",
        "starts with the same values as",
    ),
    "init_uniform_where_nanogpt_draws_a_normal": (
        "models.py",
        [
            (
                "                p.data[...] = np.random.normal(0.0, std, p.data.shape)\n",
                "                bound = std * math.sqrt(3.0)\n"
                "                p.data[...] = np.random.uniform(-bound, bound, p.data.shape)\n",
            )
        ],
        "GPT",
        "and kurtosis 1.8",
    ),
    "head_made_before_the_embedding": (
        "models.py",
        [
            (
                "        c = config\n        self.transformer = {\n",
                "        c = config\n"
                "        self.lm_head = Linear(c.n_embd, c.vocab_size, bias=False)\n"
                "        self.transformer = {\n",
            ),
            (
                "        self.lm_head = Linear(c.n_embd, c.vocab_size, bias=False)\n"
                '        self.lm_head.weight = self.transformer["wte"].weight\n',
                '        self.transformer["wte"].weight = self.lm_head.weight\n',
            ),
        ],
        "GPT",
        "listed as lm_head.weight: tied, but the head was made first",
    ),
    "probabilities_without_targets": (
        "models.py",
        [
            (
                '        logits = self.lm_head(tr["ln_f"](x))\n',
                '        logits = self.lm_head(tr["ln_f"](x))\n'
                "        if targets is None:\n"
                "            return softmax(logits, dim=-1), None\n",
            )
        ],
        "GPT",
        "returns probabilities, not the logits",
    ),
    "groups_list_a_weight_twice": (
        "models.py",
        [
            (
                "    params = model.parameters()\n",
                "    params = model.parameters()\n    params += params[:1]\n",
            )
        ],
        "MLP trains on names",
        "configure_optimizers' groups list wte.weight more than once",
    ),
    "batch_of_one_squeezed": (
        "models.py",
        [("        idx = np.asarray(idx)\n", "        idx = np.asarray(idx).squeeze()\n")],
        "GPT",
        "GPT(...)(idx[:1, :2]) raised IndexError",
    ),
    "gpt_eats_memory": (
        "models.py",
        [
            (
                "        idx = np.asarray(idx)\n",
                "        idx = np.asarray(idx)\n        self.cache = np.ones((2**31,))\n",
            )
        ],
        "GPT",
        "MemoryError",
    ),
    "attention_crashes": (
        "models.py",
        [
            (
                "        b, t, c = x.shape\n",
                "        b, t, c = x.shape\n        __import__('ctypes').string_at(0)\n",
            )
        ],
        "CausalSelfAttention",
        "was killed by SIGSEGV",
    ),
    "mlp_hangs": (
        "models.py",
        [
            (
                "        idx = np.array(idx)\n",
                "        idx = np.array(idx)\n        while True:\n            pass\n",
            )
        ],
        "makemore's MLP",
        "did not finish",
    ),
}

EINSUM_OPS = '''

def attention(q, k, v, scale, mask, drop):
    """drop(softmax(q k^T * scale, masked)) @ v with einsum nodes (drop: the dropout)."""
    scores = Tensor(np.einsum("bhtd,bhsd->bhts", q.data, k.data) * scale, (q, k), "scores")

    def _scores_backward():
        q.grad += np.einsum("bhts,bhsd->bhtd", scores.grad, k.data) * scale
        k.grad += np.einsum("bhts,bhtd->bhsd", scores.grad, q.data) * scale

    scores._backward = _scores_backward
    att = drop(softmax(masked_fill(scores, mask, -np.inf), dim=-1))
    out = Tensor(np.einsum("bhts,bhsd->bhtd", att.data, v.data), (att, v), "weighted")

    def _weighted_backward():
        att.grad += np.einsum("bhtd,bhsd->bhts", out.grad, v.data)
        v.grad += np.einsum("bhts,bhtd->bhsd", att.data, out.grad)

    out._backward = _weighted_backward
    return out
'''

WRITTEN_DIFFERENTLY = {  # name -> [(file, [(old, new), ...]), ...]; old None: new is appended
    "fused_layer_norm": [("lm_ops.py", FUSED_RULE)],
    "einsum_attention": [
        ("lm_ops.py", [(None, EINSUM_OPS)]),
        (
            "models.py",
            [
                ("from lm_ops import cat,", "from lm_ops import attention, cat,"),
                (ATTENTION_SCALE + MASK_THEN_SOFTMAX, ""),
                (
                    MERGE,
                    "        mask = np.triu(np.ones((t, t), dtype=bool), 1)\n"
                    "        y = attention(\n"
                    "            q, k, v, 1.0 / math.sqrt(hs), mask,\n"
                    "            lambda a: dropout(a, self.dropout, self.training),\n"
                    "        )\n"
                    "        y = y.transpose(0, 2, 1, 3).reshape(b, t, c)\n",
                ),
            ],
        ),
    ],
    "dropout_imported_as_drop": [
        (
            "models.py",
            [
                (
                    "from lm_ops import cat, dropout, embedding,",
                    "from lm_ops import dropout as drop\nfrom lm_ops import cat, embedding,",
                ),
                ("att = dropout(softmax(", "att = drop(softmax("),
                ("return dropout(self.c_proj(y)", "return drop(self.c_proj(y)"),
                ("return dropout(self.c_proj(gelu(", "return drop(self.c_proj(gelu("),
                ("x = dropout(x, self.config", "x = drop(x, self.config"),
            ],
        )
    ],
    "log_sum_exp_cross_entropy": [
        (
            "models.py",
            [
                (
                    "    return cross_entropy(logits.reshape(b * t, v), "
                    "np.asarray(targets).reshape(b * t))\n",
                    "    flat = logits.reshape(b * t, v)\n"
                    "    onehot = np.eye(v)[np.asarray(targets).reshape(b * t)]\n"
                    "    return (flat.log_softmax(-1) * onehot).sum() * (-1.0 / (b * t))\n",
                )
            ],
        )
    ],
}
