"""The scalar engines beside solved_starter.py: each is it with a few lines replaced.

BUGS: name -> ([(old, new), ...], the row that must fail, words its diagnosis must contain);
in the words, {at:TEXT} stands for NAME.py:N, the line of the engine written out that holds
TEXT. WRITTEN_DIFFERENTLY: correct engines that must pass; NOTED: a correct one that passes
with a note. Each old text occurs exactly once where it is replaced (write.py asserts it), so
a variant cannot drift silently from solved_starter.py. The engines that are programs of
their own (they hang, crash, recurse forever, eat memory or do not import) are files here.
"""

WALK = """\
        topo, visited, stack = [], set(), [(self, False)]
        while stack:  # depth-first with an explicit stack: no recursion limit
            node, inputs_done = stack.pop()
            if inputs_done:
                topo.append(node)
            elif node not in visited:
                visited.add(node)
                stack.append((node, True))
                stack.extend((child, False) for child in node._prev)
"""  # backward()'s topological sort

BUGS = {
    # the gradient is overwritten (=) in the backward of *, not accumulated (+=).
    "overwrite_mul": (
        [
            (
                "            self.grad += other.data * out.grad\n"
                "            other.grad += self.data * out.grad\n",
                "            self.grad = other.data * out.grad\n"
                "            other.grad = self.data * out.grad\n",
            ),
        ],
        "reuse",
        "overwritten, not accumulated: `=` where `+=` belongs in the backward of *.",
    ),
    # the gradient is overwritten (=) in the backward of +.
    "overwrite_add": (
        [
            (
                "            self.grad += out.grad\n            other.grad += out.grad\n",
                "            self.grad = out.grad\n            other.grad = out.grad\n",
            ),
        ],
        "reuse",
        "`=` where `+=` belongs in the backward of +.",
    ),
    # backward() walks breadth-first from the output instead of in reverse topological order.
    "breadth_first": (
        [
            (
                WALK,
                "",
            ),
            (
                "        for node in reversed(topo):\n            node._backward()\n",
                "        queue, seen = [self], {self}\n"
                "        while queue:  # breadth-first: a node can run before all of its users "
                "have pushed\n"
                "            node = queue.pop(0)\n"
                "            node._backward()\n"
                "            for child in node._prev:\n"
                "                if child not in seen:\n"
                "                    seen.add(child)\n"
                "                    queue.append(child)\n",
            ),
        ],
        "order",
        "before all of its users had pushed theirs",
    ),
    # backward() walks the topological order forwards (inputs first).
    "forward_order": (
        [
            (
                "        for node in reversed(topo):\n",
                "        for node in topo:\n",
            ),
        ],
        "order",
        "the walk goes through the topological order forwards",
    ),
    # backward() never seeds the output's gradient with 1.0.
    "no_seed": (
        [
            (
                "        self.grad = 1.0\n",
                "",
            ),
        ],
        "seed",
        "backward() forgets to seed 1.0",
    ),
    # backward() seeds the output's gradient after the walk, so every rule pushed 0.
    "seed_after_walk": (
        [
            (
                "        self.grad = 1.0\n",
                "",
            ),
            (
                "            node._backward()\n",
                "            node._backward()\n        self.grad = 1.0\n",
            ),
        ],
        "seed",
        (
            "the output's _backward was called while out.grad was still 0: the seed is set after "
            "the walk, so every rule pushed 0. Set self.grad = 1.0 first; look at "
            "{at:def backward} (backward)"
        ),
    ),
    # the walk leaves out the node it starts from (topo[:-1]), so the output's own _backward never
    # runs and nothing reaches its inputs.
    "output_skipped": (
        [
            (
                "        for node in reversed(topo):\n",
                "        for node in reversed(topo[:-1]):\n",
            ),
        ],
        "seed",
        (
            "backward() never called the output's own _backward (the watched walk recorded no "
            "call to it)"
        ),
    ),
    # backward's list is a default argument, made once when `def` runs, so every call walks the
    # graphs of the calls before it again.
    "topo_default": (
        [
            (
                "    def backward(self):\n"
                "        topo, visited, stack = [], set(), [(self, False)]\n",
                "    def backward(self, topo=[]):  # noqa: B006\n"
                "        visited, stack = set(), [(self, False)]\n",
            ),
        ],
        "two backward() calls",
        (
            "(a+b).backward() added 4, expected 1; then (c*d).backward(), a graph without a, "
            "moved a.grad to 11. The graph's list survives between calls: a default argument is "
            "made once, when def runs, and every call adds to it: backward ({at:def backward}): "
            "topo=[]"
        ),
    ),
    # a micrograd-style build_topo whose list and visited set are default arguments, made once
    # when `def` runs and kept between calls.
    "build_topo_default": (
        [
            (
                "import math\n",
                "import math\n"
                "\n"
                "\n"
                "def build_topo(v, topo=[], visited=set()):  # noqa: B006\n"
                "    if v not in visited:\n"
                "        visited.add(v)\n"
                "        for child in v._prev:\n"
                "            build_topo(child)\n"
                "        topo.append(v)\n"
                "    return topo\n",
            ),
            (
                WALK,
                "",
            ),
            (
                "        for node in reversed(topo):\n",
                "        for node in reversed(build_topo(self)):\n",
            ),
        ],
        "two backward() calls",
        "build_topo ({at:def build_topo}): topo=[], visited=set()",
    ),
    # the topological order is a list of the module, kept between calls, so every backward() walks
    # the graphs of the calls before it again.
    "global_topo": (
        [
            (
                "import math\n",
                "import math\n\nTOPO = []  # the topological order\n",
            ),
            (
                "        topo, visited, stack = [], set(), [(self, False)]\n",
                "        topo, visited, stack = TOPO, set(), [(self, False)]\n",
            ),
        ],
        "two backward() calls",
        "Something keeps the nodes between calls",
    ),
    # Values compare and hash by their data, so two nodes holding the same number are one node to
    # the visited set.
    "eq_by_data": (
        [
            (
                "        self._backward = lambda: None  # a leaf has no inputs: nothing to push\n",
                "        self._backward = lambda: None  # a leaf has no inputs: nothing to push\n"
                "\n"
                "    def __eq__(self, other):\n"
                "        return isinstance(other, Value) and self.data == other.data\n"
                "\n"
                "    def __hash__(self):\n"
                "        return hash(self.data)\n",
            ),
        ],
        "order",
        (
            "v3 and v5 are two nodes, but == calls them equal and they hash alike (Value.__eq__, "
            "{at:def __eq__}), so the visited set took them for one"
        ),
    ),
    # log's rule subtracts, d(log a)/da = -1/a.
    "log_sign": (
        [
            (
                "            self.grad += out.grad / self.data\n",
                "            self.grad -= out.grad / self.data\n",
            ),
        ],
        "log",
        "sign: d(log a)/da = 1/a",
    ),
    # log's rule divides by the output, the log, where d(log a)/da = 1/a divides by the input.
    "log_from_output": (
        [
            (
                "            self.grad += out.grad / self.data\n",
                "            self.grad += out.grad / out.data\n",
            ),
        ],
        "log",
        "log's derivative was taken from the output instead of the input",
    ),
    # a topological sort with no visited set, so a node reached by two paths is listed twice and
    # its gradient counted twice.
    "no_visited": (
        [
            (
                "        topo, visited, stack = [], set(), [(self, False)]\n",
                "        topo, stack = [], [(self, False)]\n",
            ),
            (
                "            elif node not in visited:\n                visited.add(node)\n",
                "            else:\n",
            ),
        ],
        "order",
        "counted 2 times: backward() ran a node's _backward 2 times",
    ),
    # _prev holds copies of the children, so the sort cannot see two paths meet at one node.
    "prev_copies": (
        [
            (
                "import math\n",
                "import copy\nimport math\n",
            ),
            (
                "        self._prev = set(_children)\n",
                "        self._prev = {copy.copy(child) for child in _children}\n",
            ),
        ],
        "order",
        "_prev holds copies of the children",
    ),
    # the sort appends a node before its children (pre-order), so the reversed list does not put
    # every user first.
    "preorder_sort": (
        [
            (
                "            if inputs_done:\n",
                "            if inputs_done:\n"
                "                continue\n"
                "            if node not in visited:\n"
                "                visited.add(node)\n",
            ),
            (
                "            elif node not in visited:\n"
                "                visited.add(node)\n"
                "                stack.append((node, True))\n",
                "",
            ),
        ],
        "order",
        "appends a node before its children (pre-order)",
    ),
    # the rule of * adds the path twice when both inputs are one Value (a * a), beside the general
    # rule that already covers it.
    "mul_square_twice": (
        [
            (
                "            other.grad += self.data * out.grad\n",
                "            other.grad += self.data * out.grad\n"
                "            if self is other:  # a * a: the power rule, 2a\n"
                "                self.grad += 2 * self.data * out.grad\n",
            ),
        ],
        "reuse",
        "counted 2 times: a value used twice in * gets 2 times",
    ),
    # exp's rule pushes to its input twice, once through the loop over out._prev and once through
    # self.
    "exp_rule_twice": (
        [
            (
                "            self.grad += out.data * out.grad\n",
                "            for child in out._prev:\n"
                "                child.grad += out.data * out.grad\n"
                "            self.grad += out.data * out.grad\n",
            ),
        ],
        "exp",
        "counted 2 times: every gradient of exp is 2 times",
    ),
    # tanh and exp are made in a loop, and their rules read the loop's derivative when they run
    # (late binding): both get the last one's, exp's.
    "late_bound": (
        [
            (
                "    def tanh(self):\n"
                "        t = math.tanh(self.data)\n"
                '        out = Value(t, (self,), "tanh")\n'
                "\n"
                "        def _backward():\n"
                "            self.grad += (1 - out.data**2) * out.grad\n"
                "\n"
                "        out._backward = _backward\n"
                "        return out\n"
                "\n",
                "",
            ),
            (
                "    def exp(self):\n"
                '        out = Value(math.exp(self.data), (self,), "exp")\n'
                "\n"
                "        def _backward():\n"
                "            self.grad += out.data * out.grad\n"
                "\n"
                "        out._backward = _backward\n"
                "        return out\n"
                "\n",
                "",
            ),
            (
                "        return other * self**-1\n",
                "        return other * self**-1\n"
                "\n"
                "\n"
                'for _name, _f, _df in (("tanh", math.tanh, lambda t: 1 - t**2), ("exp", '
                "math.exp, lambda e: e)):\n"
                "\n"
                "    def _op(self, f=_f, name=_name):\n"
                "        out = Value(f(self.data), (self,), name)\n"
                "\n"
                "        def _backward():\n"
                "            self.grad += _df(out.data) * out.grad  # noqa: B023 (the bug)\n"
                "\n"
                "        out._backward = _backward\n"
                "        return out\n"
                "\n"
                "    setattr(Value, _name, _op)\n",
            ),
        ],
        "tanh",
        "(late binding)",
    ),
    # the power rule keeps the exponent: n * a**n.
    "pow_not_lowered": (
        [
            (
                "            self.grad += other * self.data ** (other - 1) * out.grad\n",
                "            self.grad += other * self.data**other * out.grad\n",
            ),
        ],
        "a ** n",
        "the exponent was not lowered",
    ),
    # tanh's derivative written 1 - t.
    "tanh_square_missing": (
        [
            (
                "            self.grad += (1 - out.data**2) * out.grad\n",
                "            self.grad += (1 - out.data) * out.grad\n",
            ),
        ],
        "tanh",
        "the square is missing",
    ),
    # the rule of + pushes to its first input only.
    "add_one_input": (
        [
            (
                "            other.grad += out.grad\n",
                "",
            ),
        ],
        "a + b",
        "only one input received the gradient",
    ),
    # the rule of * passes out.grad on unchanged, as + does.
    "mul_like_add": (
        [
            (
                "            self.grad += other.data * out.grad\n"
                "            other.grad += self.data * out.grad\n",
                "            self.grad += out.grad\n            other.grad += out.grad\n",
            ),
        ],
        "a * b",
        "treated like +",
    ),
    # relu's rule passes the gradient everywhere.
    "relu_no_mask": (
        [
            (
                "            self.grad += (out.data > 0) * out.grad\n",
                "            self.grad += out.grad\n",
            ),
        ],
        "relu",
        "relu passes gradient where its output is 0 (at a = -1.5 and a = 0)",
    ),
    # exp's rule multiplies by the input, not exp(a).
    "exp_from_input": (
        [
            (
                "            self.grad += out.data * out.grad\n",
                "            self.grad += self.data * out.grad\n",
            ),
        ],
        "exp",
        "not the input a",
    ),
    # tanh's derivative is computed from the input, not the output.
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
    # the power rule is missing its factor n.
    "pow_missing_n": (
        [
            (
                "            self.grad += other * self.data ** (other - 1) * out.grad\n",
                "            self.grad += self.data ** (other - 1) * out.grad\n",
            ),
        ],
        "a ** n",
        "the power rule is missing its factor n",
    ),
    # division has its own backward, with the sign of d(a/b)/db wrong.
    "div_sign": (
        [
            (
                "        return self * other**-1\n",
                "        other = other if isinstance(other, Value) else Value(other)\n"
                '        out = Value(self.data / other.data, (self, other), "/")\n'
                "\n"
                "        def _backward():\n"
                "            self.grad += out.grad / other.data\n"
                "            other.grad += self.data / other.data**2 * out.grad\n"
                "\n"
                "        out._backward = _backward\n"
                "        return out\n",
            ),
        ],
        "a / b",
        "division's sign",
    ),
    # subtraction has its own backward, passing +out.grad to the second input.
    "sub_sign": (
        [
            (
                "        return self + (-other)\n",
                "        other = other if isinstance(other, Value) else Value(other)\n"
                '        out = Value(self.data - other.data, (self, other), "-")\n'
                "\n"
                "        def _backward():\n"
                "            self.grad += out.grad\n"
                "            other.grad += out.grad\n"
                "\n"
                "        out._backward = _backward\n"
                "        return out\n",
            ),
        ],
        "a - b",
        "the sign of the second input",
    ),
    # there is no __rmul__, so 2 * a raises TypeError.
    "missing_rmul": (
        [
            (
                "    def __rmul__(self, other):  # 2 * a\n        return self * other\n\n",
                "",
            ),
        ],
        "numbers with Values",
        "2 * a raised TypeError",
    ),
    # a leaf's _backward sets its grad to 1 instead of doing nothing.
    "leaf_backward": (
        [
            (
                "        self._backward = lambda: None  # a leaf has no inputs: nothing to push\n",
                "        self._backward = self._leaf_backward\n"
                "\n"
                "    def _leaf_backward(self):\n"
                '        self.grad = 1.0  # "a leaf\'s derivative with respect to itself is 1"\n',
            ),
        ],
        "leaf _backward",
        "a leaf's _backward is not a no-op",
    ),
    # relu passes the gradient where its input is 0 (>= instead of >).
    "relu_at_zero": (
        [
            (
                "            self.grad += (out.data > 0) * out.grad\n",
                "            self.grad += (self.data >= 0) * out.grad\n",
            ),
        ],
        "relu",
        "relu passes gradient where its output is 0 (at a = 0)",
    ),
    # each input of * receives its own value instead of the other's.
    "mul_own_value": (
        [
            (
                "            self.grad += other.data * out.grad\n"
                "            other.grad += self.data * out.grad\n",
                "            self.grad += self.data * out.grad\n"
                "            other.grad += other.data * out.grad\n",
            ),
        ],
        "a * b",
        "each input received its own value",
    ),
    # exp's backward forgets to multiply by out.grad (the chain rule).
    "exp_ignores_upstream": (
        [
            (
                "            self.grad += out.data * out.grad\n",
                "            self.grad += out.data\n",
            ),
        ],
        "exp",
        "the backward ignores out.grad",
    ),
    # __rsub__ computes a - 2 for 2 - a.
    "rsub_swapped": (
        [
            (
                "        return other + (-self)\n",
                "        return self + (-other)\n",
            ),
        ],
        "numbers with Values",
        "the operands are swapped",
    ),
    # held out for issue 30: written without looking at the grader's words
    # the power rule is written n * out / a (a**n / a is a**(n-1)), which divides by zero
    # at a = 0.
    "pow_rule_from_output": (
        [
            (
                "            self.grad += other * self.data ** (other - 1) * out.grad\n",
                "            self.grad += other * out.data / self.data * out.grad\n",
            ),
        ],
        "a ** n",
        "backward raised ZeroDivisionError: float division by zero",
    ),
    # a ** (n - 1) in the power rule is computed as exp((n - 1) * log a), which is right only for
    # a > 0.
    "pow_rule_by_logs": (
        [
            (
                "            self.grad += other * self.data ** (other - 1) * out.grad\n",
                "            self.grad += other * math.exp((other - 1) * math.log(self.data)) * "
                "out.grad\n",
            ),
        ],
        "a ** n",
        "backward raised ValueError: math domain error",
    ),
    # division has its own backward and b's gradient is -a / b, missing the square (right only at
    # b = 1).
    "div_square_missing": (
        [
            (
                "        return self * other**-1\n",
                "        other = other if isinstance(other, Value) else Value(other)\n"
                '        out = Value(self.data / other.data, (self, other), "/")\n'
                "\n"
                "        def _backward():\n"
                "            self.grad += out.grad / other.data\n"
                "            other.grad += -self.data / other.data * out.grad\n"
                "\n"
                "        out._backward = _backward\n"
                "        return out\n",
            ),
        ],
        "a / b",
        "wrong gradient at a = 3, b = -2: got -0.5, 1.5, expected",
    ),
    # the optional 2 ** a takes log of the exponent a instead of the base 2 in its rule.
    "rpow_log_of_exponent": (
        [
            (
                "    def __rtruediv__(self, other):  # 2 / a\n",
                "    def __rpow__(self, other):  # 2 ** a\n"
                '        out = Value(other**self.data, (self,), f"{other}**")\n'
                "\n"
                "        def _backward():\n"
                "            self.grad += out.data * math.log(abs(self.data)) * out.grad\n"
                "\n"
                "        out._backward = _backward\n"
                "        return out\n"
                "\n"
                "    def __rtruediv__(self, other):  # 2 / a\n",
            ),
        ],
        "2 ** a",
        "wrong gradient at a = 1.5: got 1.14683, expected 1.96052",
    ),
    # the optional sigmoid's rule s * (1 - s) uses the input a as s instead of the output.
    "sigmoid_from_input": (
        [
            (
                "    def exp(self):\n",
                "    def sigmoid(self):\n"
                '        out = Value(1 / (1 + math.exp(-self.data)), (self,), "sigmoid")\n'
                "\n"
                "        def _backward():\n"
                "            self.grad += self.data * (1 - self.data) * out.grad\n"
                "\n"
                "        out._backward = _backward\n"
                "        return out\n"
                "\n"
                "    def exp(self):\n",
            ),
        ],
        "sigmoid",
        "sigmoid's derivative was taken from the input",
    ),
    # backward() sets every node's grad to 0 before the walk (to save the learner a zero_grad), so
    # gradients of separate graphs no longer add up in the leaves as torch's do.
    "backward_zeroes_graph": (
        [
            (
                "                stack.extend((child, False) for child in node._prev)\n",
                "                stack.extend((child, False) for child in node._prev)\n"
                "        for node in topo:\n"
                "            node.grad = 0.0\n",
            ),
        ],
        "two backward() calls",
        "the second call did not add to it (PyTorch's leaves hold 4)",
    ),
    # issue 39: causes named elsewhere or nowhere
    # the backward of ** leaves out out.grad, so it is right only where the power is the output
    # (out.grad 1).
    "pow_ignores_upstream": (
        [
            (
                "            self.grad += other * self.data ** (other - 1) * out.grad\n",
                "            self.grad += other * self.data ** (other - 1)\n",
            ),
        ],
        "a ** n",
        "the backward ignores out.grad",
    ),
    # the backward of + adds a's whole gradient into b's, not out.grad: right while a.grad was 0
    # before the rule ran.
    "add_pushes_self_grad": (
        [
            (
                "            other.grad += out.grad\n",
                "            other.grad += self.grad\n",
            ),
        ],
        "a + b",
        "b.grad received a.grad (after its update), not its own share of out.grad",
    ),
    # the topological sort checks the visited set only when it pushes a node, so a node pushed by
    # two users before either is done is taken and listed twice, and its gradient pushed twice.
    "topo_lists_twice": (
        [
            (
                "            elif node not in visited:\n",
                "            else:\n",
            ),
            (
                "                stack.extend((child, False) for child in node._prev)\n",
                "                stack.extend((child, False) for child in node._prev if child not "
                "in visited)\n",
            ),
        ],
        "order",
        "counted 2 times: backward() ran a node's _backward 2 times, once per path to it",
    ),
    # a correct engine, but another library's autograd loaded beside it: not the learner's own.
    "imports_torch": (
        [("import math\n", "import math\n\nimport torch  # the learner's own? not with this\n")],
        "own work",
        "your code imported torch (in its process here): the engine must be your own",
    ),
}

WRITTEN_DIFFERENTLY = {
    # A correct engine written differently from the solved starter: `_prev` a list, integer grads,
    # a rule of its own for -, the sort recursive-free with an index loop. It passes.
    "solved_differently": [
        (
            "        self.grad = 0.0  # d(final output) / d(this value), filled in by "
            "backward()\n"
            "        self._prev = set(_children)\n",
            "        self.grad = 0  # d(final output) / d(this value), filled in by "
            "backward()\n"
            "        self._prev = list(_children)\n",
        ),
        (
            "        self.grad = 1.0\n",
            "        self.grad = 1\n",
        ),
        (
            "    def __sub__(self, other):  # a - b\n        return self + (-other)\n",
            "    def __sub__(self, other):  # a - b, with a rule of its own\n"
            "        other = other if isinstance(other, Value) else Value(other)\n"
            '        out = Value(self.data - other.data, (self, other), "-")\n'
            "\n"
            "        def _backward():\n"
            "            self.grad += out.grad\n"
            "            other.grad -= out.grad\n"
            "\n"
            "        out._backward = _backward\n"
            "        return out\n",
        ),
    ],
    # A correct engine written differently: -, / and unary - have rules of their own, relu's rule
    # reads its input, and the walk is Kahn's algorithm (count each node's users, run a node when
    # its count reaches 0). It must pass.
    "solved_own_rules": [
        (
            "            self.grad += (out.data > 0) * out.grad\n",
            "            self.grad += out.grad if self.data > 0 else 0.0\n",
        ),
        (
            WALK,
            "        users, seen, stack = {}, {self}, [self]\n"
            "        while stack:\n"
            "            node = stack.pop()\n"
            "            for child in node._prev:\n"
            "                users[child] = users.get(child, 0) + 1\n"
            "                if child not in seen:\n"
            "                    seen.add(child)\n"
            "                    stack.append(child)\n",
        ),
        (
            "        for node in reversed(topo):\n            node._backward()\n",
            "        ready = [self]\n"
            "        while ready:\n"
            "            node = ready.pop()\n"
            "            node._backward()\n"
            "            for child in node._prev:\n"
            "                users[child] -= 1\n"
            "                if users[child] == 0:\n"
            "                    ready.append(child)\n",
        ),
        (
            "        return self * -1\n",
            '        out = Value(-self.data, (self,), "neg")\n'
            "\n"
            "        def _backward():\n"
            "            self.grad -= out.grad\n"
            "\n"
            "        out._backward = _backward\n"
            "        return out\n",
        ),
        (
            "        return self + (-other)\n",
            "        other = other if isinstance(other, Value) else Value(other)\n"
            '        out = Value(self.data - other.data, (self, other), "-")\n'
            "\n"
            "        def _backward():\n"
            "            self.grad += out.grad\n"
            "            other.grad -= out.grad\n"
            "\n"
            "        out._backward = _backward\n"
            "        return out\n",
        ),
        (
            "        return self * other**-1\n",
            "        other = other if isinstance(other, Value) else Value(other)\n"
            '        out = Value(self.data / other.data, (self, other), "/")\n'
            "\n"
            "        def _backward():\n"
            "            self.grad += out.grad / other.data\n"
            "            other.grad -= out.data / other.data * out.grad\n"
            "\n"
            "        out._backward = _backward\n"
            "        return out\n",
        ),
    ],
}
NOTED = {
    # a recursive topological sort, as micrograd's: right, but deep graphs hit the recursion limit
    # (a note, not a failure).
    "recursive_topo": [
        (
            WALK,
            "        topo, visited = [], set()\n"
            "\n"
            "        def build(v):\n"
            "            if v not in visited:\n"
            "                visited.add(v)\n"
            "                for child in v._prev:\n"
            "                    build(child)\n"
            "                topo.append(v)\n"
            "\n"
            "        build(self)\n",
        ),
    ],
}
