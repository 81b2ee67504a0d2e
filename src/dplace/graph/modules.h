// Module paths of ops: which PyTorch module an op of an exported or traced model belongs to, read
// from its scoped name ("/layer1/layer1.0/conv1/Conv") or from the state_dict names of the
// parameters it holds. The device map, module units and the frameworks' pipeline rules use them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dplace/graph/graph.h"

namespace dplace::graph {

// "layer1.0.conv1" from "/layer1/layer1.0/conv1/Conv" (also "/...Conv/grad"); "" when unscoped.
std::string ModulePath(const std::string& op_name);

// The module around `path` ("layers.3" from "layers.3.attn"); "" (the root) for a top-level one.
std::string ParentModule(const std::string& path);

// A parameter's module: its name less the last segment ("layer1.0.conv1.weight" ->
// "layer1.0.conv1"), or nullopt for names torch.onnx made up for folded constants
// ("onnx::Conv_497").
std::optional<std::string> ParameterModule(const std::string& name);

// An op's module: that of its first named parameter ("h.3.attn.c_attn.weight" ->
// "h.3.attn.c_attn"); else that of a shared parameter it reads when its scope ends with that
// module's name (torch.onnx scopes a module registered under several names by its first:
// T5's shared embedding called as the decoder's "embed_tokens" is "/decoder/shared/Gather", the
// module "shared"); else its scope (ModulePath); "" for the root.
std::string OpModule(const Op& op);

// Every op's module as a device map sees it: OpModule, where torch.onnx's names for the second
// and later calls of a module ("relu_1", "relu_2") are that module ("relu") when it is called by
// its own name too, a scope that OpModule found to name a module registered under several names
// ("encoder.shared" for "shared") is that module for every op in it, and a backward or update op
// ("X/grad", "X/update") is in its forward op X's.
std::vector<std::string> OpModules(const Graph& g);

// `g` with the co-location groups of each parameter's readers joined to its holder's (an op
// without a group gets one): a tied weight is one tensor, on one device, as a device map runs it
// (accelerate keeps one copy). The joined group is named "tied:<parameter>". `g` itself when no
// op reads a shared parameter.
Graph TieSharedParameters(const Graph& g);

// The repeated block a module belongs to: its path through the first index after a name
// ("layers.3" from "layers.3.attn.q", "vision.blocks.1" from "vision.blocks.1.mlp.0"); "" when no
// segment after the first is an index.
std::string BlockOf(const std::string& module);

}  // namespace dplace::graph
