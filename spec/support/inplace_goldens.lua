-- Written by spec/support/gen_inplace_goldens.py (Debian's python3-torch 1.13.0a0); do not edit.
return {
  ['add_'] = { x = {2.0, 3.0, 15.0, 1.25} },
  ['mul_ tensor'] = { x = {2.0, -6.0, -3.0, 0.25}, v = {0.5, 2.5, 6.0, 0.375} },
  ['exp_'] = { x = {5.43656365691809, -0.3283399944955952, 327.5889001988654, 4.4816890703380645} },
  ['view mul_'] = { x = {2.0, -12.0, 18.0, 1.0} },
  ['masked_fill_'] = { x = {0.0, -4.0, 0.0, 1.0} },
  ['mask assign'] = { x = {2.0, 0.0, 0.0, 1.0} },
  ['index assign'] = { x = {4.0, 4.0, 4.0, 4.0}, K = {32.0, 42.0, 62.0, 72.0} },
  ['copy into slice'] = { x = {-5.0, 9.0, 0.0, 0.75} },
  ['stale view'] = { x = {0.0, 6.0, -12.0, 0.0} },
  ['view of a base that joins the graph'] = { x = {-10.0, 0.0, 0.0, 2.0} },
  ['saved result'] = { message = 'one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead.' },
  ['saved input'] = { message = 'one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]] is at version 1; expected version 0 instead.' },
  ['saved, written through a view'] = { message = 'one of the variables needed for gradient computation has been modified by an inplace operation: [torch.DoubleTensor [4]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead.' },
  ['leaf'] = { message = 'a leaf Variable that requires grad is being used in an in-place operation.' },
  ['view of a leaf'] = { message = 'a view of a leaf Variable that requires grad is being used in an in-place operation.' },
}
