"""The tensor engines beside solved_starter.py: each is it with a few lines replaced.

BUGS: name -> ([(old, new), ...], the row that must fail, words its diagnosis must contain).
WRITTEN_DIFFERENTLY: correct engines that must pass; NOTED: a correct one that passes with a
note. Each old text occurs exactly once where it is replaced (write.py asserts it), so a
variant cannot drift silently from solved_starter.py. The engines that are programs of their
own (they hang, crash or eat memory) are files here.
"""

WALK = """\
        topo, seen, stack = [], set(), [(self, False)]
        while stack:  # an explicit stack: no recursion limit on deep graphs
            node, done = stack.pop()
            if done:
                topo.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((child, False) for child in node._prev)
"""  # backward()'s topological sort

BUGS = {
    # log_softmax takes exp of the raw inputs: inf past about 88.
    "log_softmax_unshifted": (
        [
            (
                "        shifted = self.data - self.data.max(axis=axis, keepdims=True)  # no "
                "overflow in exp\n",
                "        shifted = self.data\n",
            ),
        ],
        "log_softmax",
        "wrong for (2, 3) on inputs near 1000: exp(1000) is inf",
    ),
    # cross_entropy takes exp of the raw logits.
    "cross_entropy_unshifted": (
        [
            (
                "    shifted = logits.data - logits.data.max(axis=1, keepdims=True)\n",
                "    shifted = logits.data\n",
            ),
        ],
        "cross_entropy",
        "wrong for (3, 4) on inputs near 1000: exp(1000) is inf",
    ),
    # a + b pushes out.grad to both inputs without summing it back to their shapes.
    "add_not_unbroadcast": (
        [
            (
                "            self.grad += unbroadcast(out.grad, self.shape)\n"
                "            other.grad += unbroadcast(out.grad, other.shape)\n",
                "            self.grad += out.grad\n            other.grad += out.grad\n",
            ),
        ],
        "a + b",
        "not summed back over the broadcast dimensions",
    ),
    # unbroadcast sums over the added leading axes but not the stretched axes of size 1.
    "unbroadcast_leading_only": (
        [
            (
                "    for axis, size in enumerate(shape):\n"
                "        if size == 1 and grad.shape[axis] != 1:\n"
                "            grad = grad.sum(axis=axis, keepdims=True)\n",
                "",
            ),
        ],
        "a * b",
        "but not over the axes of size 1 it stretched",
    ),
    # the backward of @ leaves out the transposes: g @ b where g @ b.T belongs.
    "matmul_no_transpose": (
        [
            (
                "            grad_a = g2 @ np.swapaxes(b2, -1, -2)\n"
                "            grad_b = np.swapaxes(a2, -1, -2) @ g2\n",
                "            grad_a = g2 @ b2\n            grad_b = a2 @ g2\n",
            ),
        ],
        "a @ b",
        "a transpose is missing in the backward of @",
    ),
    # the backward of @ transposes with .T, which reverses every axis of a batch.
    "matmul_dot_T": (
        [
            (
                "            grad_a = g2 @ np.swapaxes(b2, -1, -2)\n"
                "            grad_b = np.swapaxes(a2, -1, -2) @ g2\n",
                "            grad_a = g2 @ b2.T\n            grad_b = a2.T @ g2\n",
            ),
        ],
        "a @ b",
        ".T reverses every axis of a 3-D array",
    ),
    # the backward of @ does not sum b's gradient over the batch it was broadcast along.
    "matmul_batch_not_summed": (
        [
            (
                "            other.grad += unbroadcast(grad_b, other.shape)\n",
                "            other.grad += grad_b\n",
            ),
        ],
        "a @ b",
        "b was used by every matrix of the batch",
    ),
    # the backward of @ handles 2-D operands only, not 1-D ones.
    "matmul_2d_only": (
        [
            (
                "            if a.ndim == 1 and b.ndim == 1:  # a dot product: out is a number\n"
                "                self.grad += g * b\n"
                "                other.grad += g * a\n"
                "                return\n"
                "            a2 = a[None, :] if a.ndim == 1 else a  # a row\n"
                "            b2 = b[:, None] if b.ndim == 1 else b  # a column\n"
                "            g2 = np.expand_dims(g, -2) if a.ndim == 1 else g\n"
                "            g2 = np.expand_dims(g2, -1) if b.ndim == 1 else g2\n"
                "            grad_a = g2 @ np.swapaxes(b2, -1, -2)\n"
                "            grad_b = np.swapaxes(a2, -1, -2) @ g2\n"
                "            if a.ndim == 1:\n"
                "                grad_a = grad_a.squeeze(-2)\n"
                "            if b.ndim == 1:\n"
                "                grad_b = grad_b.squeeze(-1)\n",
                "            grad_a = g @ np.swapaxes(b, -1, -2)\n"
                "            grad_b = np.swapaxes(a, -1, -2) @ g\n",
            ),
        ],
        "a @ b",
        "the 2-D rule does not cover a 1-D operand",
    ),
    # sum's backward does not put a dropped axis back before spreading out.grad.
    "sum_no_expand": (
        [
            (
                "            g = out.grad\n"
                "            if axis is not None and not keepdims:\n"
                "                g = np.expand_dims(g, axis)\n"
                "            self.grad += g  # broadcast over the summed axes\n",
                "            self.grad += out.grad  # broadcast over the summed axes\n",
            ),
        ],
        "sum",
        "sum's backward does not put the reduced axis back",
    ),
    # mean's backward forgets the 1/n.
    "mean_missing_n": (
        [
            (
                "            self.grad += g / (self.data.size // out.data.size)\n",
                "            self.grad += g\n",
            ),
        ],
        "mean",
        "mean's backward is missing the 1/n",
    ),
    # mean's backward divides by every element, not the n averaged.
    "mean_divides_by_size": (
        [
            (
                "            self.grad += g / (self.data.size // out.data.size)\n",
                "            self.grad += g / self.data.size\n",
            ),
        ],
        "mean",
        "divides by every element of the input",
    ),
    # cross_entropy's gradient is softmax / N: the one-hot is not subtracted.
    "cross_entropy_no_onehot": (
        [
            (
                "        d[np.arange(n), targets] -= 1.0\n",
                "",
            ),
        ],
        "cross_entropy",
        "off by the one-hot",
    ),
    # log_softmax's backward is g - softmax, the sum of g dropped.
    "log_softmax_no_sum": (
        [
            (
                "            self.grad += g - np.exp(out.data) * g.sum(axis=axis, keepdims=True)\n",
                "            self.grad += g - np.exp(out.data)\n",
            ),
        ],
        "log_softmax",
        "log_softmax's backward dropped the sum",
    ),
    # a * b's backward assigns (=) where it must add (+=).
    "overwrite_mul": (
        [
            (
                "            self.grad += unbroadcast(other.data * out.grad, self.shape)\n"
                "            other.grad += unbroadcast(self.data * out.grad, other.shape)\n",
                "            self.grad = unbroadcast(other.data * out.grad, self.shape)\n"
                "            other.grad = unbroadcast(self.data * out.grad, other.shape)\n",
            ),
        ],
        "reuse",
        "`=` where `+=` belongs in the backward of *.",
    ),
    # relu's backward passes the gradient everywhere.
    "relu_passes_negative": (
        [
            (
                "            self.grad += (out.data > 0) * out.grad\n",
                "            self.grad += out.grad\n",
            ),
        ],
        "relu",
        "relu passes gradient where its output is 0",
    ),
    # tanh's derivative is taken from the input, not the output.
    "tanh_from_input": (
        [
            (
                "            self.grad += (1 - out.data**2) * out.grad\n",
                "            self.grad += (1 - self.data**2) * out.grad\n",
            ),
        ],
        "tanh",
        "taken from the input instead of the output",
    ),
    # the MLP applies no activation between its layers: it is affine.
    "mlp_no_activation": (
        [
            (
                "        for i, layer in enumerate(self.layers):\n",
                "        for layer in self.layers:\n",
            ),
            (
                "            if i < len(self.layers) - 1:\n                x = x.relu()\n",
                "",
            ),
        ],
        "network bends",
        "is affine in its input",
    ),
    # zero_grad() zeroes nothing.
    "zero_grad_noop": (
        [
            (
                "            p.grad = np.zeros_like(p.data)\n",
                "            p.grad * 0\n",
            ),
        ],
        "network gradients",
        "Linear(4, 3).zero_grad() left gradients that are not zero",
    ),
    # Linear forgets its bias.
    "linear_no_bias": (
        [
            (
                "        return x @ self.W + self.b\n",
                "        return x @ self.W\n",
            ),
        ],
        "network gradients",
        "output is not x @ W + b",
    ),
    # issue 30: wrong gradients that passed before
    # sum's backward assigns (=) where it must add (+=).
    "overwrite_sum": (
        [
            (
                "            self.grad += g  # broadcast over the summed axes\n",
                "            self.grad = g * np.ones_like(self.data)  # spread over the summed "
                "axes\n",
            ),
        ],
        "reuse",
        "`=` where `+=` belongs in the backward of sum.",
    ),
    # a - b's backward assigns (=) where it must add (+=).
    "overwrite_sub": (
        [
            (
                "            self.grad += unbroadcast(out.grad, self.shape)\n"
                "            other.grad += unbroadcast(-out.grad, other.shape)\n",
                "            self.grad = unbroadcast(out.grad, self.shape)\n"
                "            other.grad = unbroadcast(-out.grad, other.shape)\n",
            ),
        ],
        "reuse",
        "`=` where `+=` belongs in the backward of -.",
    ),
    # a / b's backward assigns (=) where it must add (+=).
    "overwrite_div": (
        [
            (
                "            self.grad += unbroadcast(out.grad / other.data, self.shape)\n"
                "            other.grad += unbroadcast(-self.data / other.data**2 * out.grad, "
                "other.shape)\n",
                "            self.grad = unbroadcast(out.grad / other.data, self.shape)\n"
                "            other.grad = unbroadcast(-self.data / other.data**2 * out.grad, "
                "other.shape)\n",
            ),
        ],
        "reuse",
        "`=` where `+=` belongs in the backward of /.",
    ),
    # transpose's backward assigns (=) where it must add (+=).
    "overwrite_transpose": (
        [
            (
                "            self.grad += np.transpose(out.grad, np.argsort(order))\n",
                "            self.grad = np.transpose(out.grad, np.argsort(order))\n",
            ),
        ],
        "reuse",
        "`=` where `+=` belongs in the backward of transpose.",
    ),
    # mean's backward assigns (=) where it must add (+=).
    "overwrite_mean": (
        [
            (
                "            self.grad += g / (self.data.size // out.data.size)\n",
                "            self.grad = g * np.ones_like(self.data) / (self.data.size // "
                "out.data.size)\n",
            ),
        ],
        "reuse",
        "`=` where `+=` belongs in the backward of mean.",
    ),
    # log_softmax's backward assigns (=) where it must add (+=).
    "overwrite_log_softmax": (
        [
            (
                "            self.grad += g - np.exp(out.data) * g.sum(axis=axis, keepdims=True)\n",
                "            self.grad = g - np.exp(out.data) * g.sum(axis=axis, keepdims=True)\n",
            ),
        ],
        "reuse",
        "`=` where `+=` belongs in the backward of log_softmax.",
    ),
    # a + b hands out.grad itself (no copy) to an input whose gradient is still zero, so two
    # tensors share one gradient array and a later in-place += into one changes the other.
    "shared_grad": (
        [
            (
                "            self.grad += unbroadcast(out.grad, self.shape)\n"
                "            other.grad += unbroadcast(out.grad, other.shape)\n",
                "            for t in (self, other):  # nothing there yet: take the gradient as "
                "it is\n"
                "                g = unbroadcast(out.grad, t.shape)\n"
                "                if t.grad.any():\n"
                "                    t.grad += g\n"
                "                else:\n"
                "                    t.grad = g\n",
            ),
        ],
        "a + b",
        "a.grad and b.grad are one array",
    ),
    # relu's forward writes into its input's array (np.maximum(..., out=self.data)), so another
    # use of the input sees the relu'd numbers.
    "relu_in_place": (
        [
            (
                '        out = Tensor(np.maximum(self.data, 0.0), (self,), "relu")\n',
                "        out = Tensor(np.maximum(self.data, 0.0, out=self.data), (self,), "
                '"relu")  # no new array\n',
            ),
        ],
        "relu",
        "relu's forward changed its input's data in place",
    ),
    # relu's mask lets the gradient through where the input is exactly 0 (torch's relu passes none
    # there).
    "relu_mask_at_zero": (
        [
            (
                "            self.grad += (out.data > 0) * out.grad\n",
                "            self.grad += (self.data >= 0) * out.grad\n",
            ),
        ],
        "relu",
        "relu's mask is wrong at exactly 0",
    ),
    # backward() zeroes every node's gradient before walking, so a second backward on a new graph
    # replaces a leaf's gradient instead of adding (torch's leaves add).
    "backward_resets_leaves": (
        [
            (
                "                stack.extend((child, False) for child in node._prev)\n",
                "                stack.extend((child, False) for child in node._prev)\n"
                "        for node in topo:  # start from clean gradients\n"
                "            node.grad = np.zeros_like(node.data)\n",
            ),
        ],
        "second backward",
        "replaced their gradients",
    ),
    # Linear's parameters() leaves out its bias, so the bias gets a gradient that no optimizer
    # step uses.
    "linear_bias_not_listed": (
        [
            (
                "        return [self.W, self.b]\n",
                "        return [self.W]\n",
            ),
        ],
        "network gradients",
        "Linear.b gets a gradient but parameters() does not return it",
    ),
    # MLP's parameters() lists only its last layer's, so the first layer gets gradients that no
    # step uses.
    "mlp_first_layer_not_listed": (
        [
            (
                "        return [p for layer in self.layers for p in layer.parameters()]\n",
                "        return self.layers[-1].parameters()\n",
            ),
        ],
        "network gradients",
        "MLP.layers[0].W and MLP.layers[0].b get a gradient but parameters() does not",
    ),
    # unbroadcast sums the stretched axes of size 1 without keepdims=True, so the axis is dropped.
    "unbroadcast_no_keepdims": (
        [
            (
                "            grad = grad.sum(axis=axis, keepdims=True)\n",
                "            grad = grad.sum(axis=axis)\n",
            ),
        ],
        "a * b",
        "were summed without keepdims=True, which drops them",
    ),
    # held out for issue 30: written without looking at the grader's words
    # transpose's backward applies the same axes again instead of their inverse: right for 2-D and
    # for reversing, wrong for a cyclic order such as transpose(1, 2, 0).
    "transpose_axes_not_inverted": (
        [
            (
                "            self.grad += np.transpose(out.grad, np.argsort(order))\n",
                "            self.grad += np.transpose(out.grad, order)\n",
            ),
        ],
        "transpose",
        "transpose's backward must undo the order",
    ),
    # unbroadcast sums away one added axis (`if` where `while` belongs), so it is right only when
    # the shapes differ by at most one axis.
    "unbroadcast_if_not_while": (
        [
            (
                "    while grad.ndim > len(shape):\n",
                "    if grad.ndim > len(shape):\n",
            ),
        ],
        "a * b",
        "only one of the axes broadcasting added on the left",
    ),
    # mean's backward tests `if axis` for "an axis was given", so axis=0 (falsy) divides by every
    # element instead of by the rows.
    "mean_axis_zero_falsy": (
        [
            (
                "            self.grad += g / (self.data.size // out.data.size)\n",
                "            n = self.data.shape[axis] if axis else self.data.size\n"
                "            self.grad += g / n\n",
            ),
        ],
        "mean",
        "treats axis=0 as no axis",
    ),
    # log_softmax's backward sums out.grad over every axis instead of the softmax axis: right only
    # for one row.
    "log_softmax_sum_all_axes": (
        [
            (
                "            self.grad += g - np.exp(out.data) * g.sum(axis=axis, keepdims=True)\n",
                "            self.grad += g - np.exp(out.data) * g.sum()\n",
            ),
        ],
        "log_softmax",
        "sums g over every axis",
    ),
    # cross_entropy's backward forgets the 1/N of the batch mean: right only for a batch of one.
    "cross_entropy_not_mean": (
        [
            (
                "        logits.grad += d / n * out.grad\n",
                "        logits.grad += d * out.grad\n",
            ),
        ],
        "cross_entropy",
        "missing the 1/N of the mean over the batch",
    ),
    # *'s backward scales out.grad in place (`g *= other.data`), so the second input reads an
    # upstream gradient already changed.
    "mul_grad_in_place": (
        [
            (
                "            self.grad += unbroadcast(other.data * out.grad, self.shape)\n",
                "            g = out.grad\n"
                "            g *= other.data  # in place: out.grad changes too\n"
                "            self.grad += unbroadcast(g, self.shape)\n",
            ),
        ],
        "a * b",
        "(look at mul_grad_in_place.py:",
    ),
    # for a 1-D a in a @ b, b's gradient is written np.outer(g, a) instead of np.outer(a, g): the
    # shape is right only when b is square.
    "matmul_vector_outer_swapped": (
        [
            (
                "                other.grad += g * a\n",
                "                other.grad += g * a\n"
                "                return\n"
                "            if a.ndim == 1 and b.ndim == 2:\n"
                "                self.grad += g @ b.T\n"
                "                other.grad += np.outer(g, a).reshape(other.shape)\n",
            ),
        ],
        "a @ b",
        "only (3,) @ (3, 4) is wrong, the other 1-D cases pass",
    ),
    # MLP.zero_grad zeroes only the first layer's parameters; the later layers' gradients pile up
    # from step to step.
    "zero_grad_first_layer": (
        [
            (
                "        self.layers = [Linear(sizes[i], sizes[i + 1]) for i in "
                "range(len(nouts))]\n"
                "\n",
                "        self.layers = [Linear(sizes[i], sizes[i + 1]) for i in "
                "range(len(nouts))]\n"
                "\n"
                "    def zero_grad(self):\n"
                "        self.layers[0].zero_grad()\n"
                "\n",
            ),
        ],
        "network gradients",
        (
            "MLP(4, [5, 3]).zero_grad() left gradients that are not zero (those of "
            "parameters()[2, 3], 2 of 4)"
        ),
    ),
    # MLP.parameters() starts from the first layer's list and then adds every layer's, so the
    # first layer's W and b are listed (and stepped) twice.
    "parameters_first_layer_twice": (
        [
            (
                "        return [p for layer in self.layers for p in layer.parameters()]\n",
                "        params = self.layers[0].parameters()\n"
                "        for layer in self.layers:\n"
                "            params += layer.parameters()\n"
                "        return params\n",
            ),
        ],
        "network gradients",
        "MLP(4, [5, 3]).parameters() lists 2 tensor(s) twice",
    ),
    # issue 39: wrong engines that passed, and causes named elsewhere
    # log's backward computes 1/a in place in its input's own array (`x = self.data; x **= -1`):
    # the gradient of a is right, but a.data is left as 1/a, so every other use of a sees the
    # wrong numbers.
    "log_backward_in_place": (
        [
            (
                "            self.grad += out.grad / self.data\n",
                "            x = self.data\n"
                "            x **= -1\n"
                "            self.grad += out.grad * x\n",
            ),
        ],
        "log",
        "log's backward changed its input's data in place",
    ),
    # backward() seeds the output's gradient with the number 1.0, not ones of its shape: right for
    # a loss of one number, wrong for any other output.
    "seed_float": (
        [
            (
                "        self.grad = np.ones_like(self.data)\n",
                "        self.grad = 1.0\n",
            ),
        ],
        "seed",
        "backward() seeds the number 1.0 (self.grad = 1.0)",
    ),
    # it keeps every array in float32 (data and gradients), about 7 digits, where the gate
    # compares with float64 to 1e-6.
    "float32_throughout": (
        [
            (
                "        self.data = np.array(data, dtype=float)  # a copy, so the caller's array "
                "stays theirs\n",
                "        self.data = np.array(data, dtype=np.float32)  # a copy, so the caller's "
                "array stays theirs\n",
            ),
        ],
        "Tensor's parts",
        "Tensor(x).data is float32 for a float64 x",
    ),
    # unbroadcast sums the added axes away from the right (axis=-1), where broadcasting adds them
    # on the left (axis=0).
    "unbroadcast_from_right": (
        [
            (
                "        grad = grad.sum(axis=0)\n",
                "        grad = grad.sum(axis=-1)\n",
            ),
        ],
        "a * b",
        "(look at unbroadcast (unbroadcast_from_right.py:",
    ),
    # unbroadcast's loop never ends when broadcasting added an axis: the sum is computed and
    # thrown away (`grad.sum(axis=0)`, not `grad = grad.sum(axis=0)`), so grad never loses an
    # axis.
    "unbroadcast_loops_forever": (
        [
            (
                "        grad = grad.sum(axis=0)\n",
                "        grad.sum(axis=0)\n",
            ),
        ],
        "a * b",
        "in unbroadcast: a loop there that never ends?",
    ),
}

WRITTEN_DIFFERENTLY = {
    # A correct tensor engine written differently: unbroadcast sums by one loop over the axes,
    # from the last to the first.
    "unbroadcast_by_loop": [
        (
            "    while grad.ndim > len(shape):\n"
            "        grad = grad.sum(axis=0)\n"
            "    for axis, size in enumerate(shape):\n"
            "        if size == 1 and grad.shape[axis] != 1:\n",
            "    extra = grad.ndim - len(shape)  # the axes broadcasting added on the left\n"
            "    for axis in range(grad.ndim - 1, -1, -1):  # removing an axis leaves the "
            "lower ones\n"
            "        if axis < extra:\n"
            "            grad = grad.sum(axis=axis)\n"
            "        elif shape[axis - extra] == 1 and grad.shape[axis] != 1:\n",
        ),
    ],
    # A correct tensor engine written differently: unbroadcast is one np.add.reduce over every
    # broadcast axis, then a reshape.
    "unbroadcast_by_add_reduce": [
        (
            "    while grad.ndim > len(shape):\n"
            "        grad = grad.sum(axis=0)\n"
            "    for axis, size in enumerate(shape):\n"
            "        if size == 1 and grad.shape[axis] != 1:\n"
            "            grad = grad.sum(axis=axis, keepdims=True)\n"
            "    return grad\n",
            "    extra = grad.ndim - len(shape)\n"
            "    stretched = [extra + i for i, n in enumerate(shape) if n == 1 and "
            "grad.shape[extra + i] != 1]\n"
            "    axes = (*range(extra), *stretched)\n"
            "    return np.add.reduce(grad, axis=axes, keepdims=True).reshape(shape)\n",
        ),
    ],
    # A correct tensor engine written differently: the backward of @ through np.einsum.
    "matmul_by_einsum": [
        (
            "            grad_a = g2 @ np.swapaxes(b2, -1, -2)\n"
            "            grad_b = np.swapaxes(a2, -1, -2) @ g2\n",
            '            grad_a = np.einsum("...ij,...kj->...ik", g2, b2)\n'
            '            grad_b = np.einsum("...ki,...kj->...ij", a2, g2)\n',
        ),
    ],
    # A correct tensor engine written differently: Linear keeps its last input and output as
    # attributes (tensors that get gradients but are not parameters, and are not leaves of its
    # own).
    "linear_keeps_its_tensors": [
        (
            "        return x @ self.W + self.b\n",
            "        self.last_x, self.last_out = x, x @ self.W + self.b  # kept for a look\n"
            "        return self.last_out\n",
        ),
    ],
    # A correct tensor engine written differently: sum and mean expand out.grad with
    # np.broadcast_to, unbroadcast sums one tuple of axes at once, / takes b's gradient from out,
    # relu's mask is np.heaviside, and backward() sorts recursively. It must pass.
    "solved_by_broadcast_to": [
        (
            "            other.grad += unbroadcast(-self.data / other.data**2 * out.grad, "
            "other.shape)\n",
            "            other.grad += unbroadcast(-out.data / other.data * out.grad, "
            "other.shape)\n",
        ),
        (
            "            self.grad += g  # broadcast over the summed axes\n",
            "            self.grad += np.broadcast_to(g, self.shape)\n",
        ),
        (
            "            self.grad += (out.data > 0) * out.grad\n",
            "            self.grad += np.heaviside(self.data, 0.0) * out.grad\n",
        ),
        (
            WALK,
            "        topo, seen = [], set()\n"
            "\n"
            "        def visit(node):\n"
            "            if node not in seen:\n"
            "                seen.add(node)\n"
            "                for child in node._prev:\n"
            "                    visit(child)\n"
            "                topo.append(node)\n"
            "\n"
            "        visit(self)\n",
        ),
        (
            "    while grad.ndim > len(shape):\n"
            "        grad = grad.sum(axis=0)\n"
            "    for axis, size in enumerate(shape):\n"
            "        if size == 1 and grad.shape[axis] != 1:\n"
            "            grad = grad.sum(axis=axis, keepdims=True)\n"
            "    return grad\n",
            "    lead = grad.ndim - len(shape)\n"
            "    stretched = tuple(lead + i for i, s in enumerate(shape) if s == 1)\n"
            "    return grad.sum(axis=tuple(range(lead)) + stretched, "
            "keepdims=True).reshape(shape)\n",
        ),
    ],
}
NOTED = {
    # every gradient is a float32 array (the data float64): gradients agree with float64 to about
    # 1e-7 only.
    "grads_float32": [
        (
            "        self.grad = np.zeros_like(self.data)  # d(final output) / d(data), same "
            "shape\n",
            "        self.grad = np.zeros_like(self.data, dtype=np.float32)  # float32: the bug\n",
        ),
        (
            "        self.grad = np.ones_like(self.data)\n",
            "        self.grad = np.ones_like(self.data, dtype=np.float32)\n",
        ),
        (
            "            p.grad = np.zeros_like(p.data)\n",
            "            p.grad = np.zeros_like(p.data, dtype=np.float32)\n",
        ),
    ],
}
