// Output shapes of the ONNX ops whose shapes ONNX's own inference (1.12) cannot follow when they
// are computed at run time: each rule takes what is known of a node's inputs (their shapes, and
// the values of the small tensors the interpreter evaluated) and gives the shape of the node's
// first output, or nullopt when that is not enough. Data-dependent sizes take their upper bound.
#pragma once

#include "dplace/io/onnx/interpreter.h"

namespace dplace::io::shape_rules {

ShapeRule Reshape();    // from the target shape's value (0 copies, -1 is inferred)
ShapeRule Flatten();    // {product of the leading dims, product of the rest}
ShapeRule Unsqueeze();  // axes from the attribute or the second input
ShapeRule Squeeze();
ShapeRule Expand();             // the input broadcast with the shape's value
ShapeRule Slice();              // from starts, ends, axes and steps' values
ShapeRule Tile();               // each dim times its repeat
ShapeRule Pad();                // pads as an input (opset 11+): begins of every axis, then ends
ShapeRule Gather();             // data's dims with the axis replaced by the indices' dims
ShapeRule Broadcast();          // every input's shape broadcast
ShapeRule NonZero();            // upper bound: every element selected
ShapeRule NonMaxSuppression();  // upper bound: every box kept (at most max per class)
ShapeRule ConstantOfShape();    // the shape's value (the output too large to hold)
ShapeRule TopK();               // the axis cut to k
ShapeRule Range();              // the range's length
ShapeRule Resize(int scales_input);  // from sizes (input 3), else floor(input x scales)

}  // namespace dplace::io::shape_rules
