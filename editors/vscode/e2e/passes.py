import torch
import torch.fx as fx
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x))


def negate_after_relu(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.relu:
            with gm.graph.inserting_before(node):
                neg = gm.graph.call_function(torch.neg, (node,))
            node.replace_all_uses_with(neg)
            neg.args = (node,)
    gm.recompile()
    return gm


def relu_to_gelu(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is torch.relu:
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(torch.nn.functional.gelu, node.args)
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm
